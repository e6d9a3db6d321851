// The live dashboard's static files: the page, its script and its style sheet (http/dashboard/,
// embedded at build time) and Chart.js, which Debian's libjs-chart.js installs and the node reads
// once at start-up (readChartJs). The data comes from /dashboard.json (dashboard_json.hpp). Built
// before the node serves; immutable afterwards, answered on the core thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "goblin/core/error.hpp"
#include "goblin/net/ws_server.hpp"

namespace goblin::labnode {

inline constexpr std::string_view kChartJsPath = "/usr/share/javascript/chart.js/chart.min.js";
inline constexpr std::uintmax_t kMaxChartJsBytes = std::uintmax_t{4} << 20;

// Chart.js's text, or why the node cannot serve it (missing file, empty, over the size limit).
Expected<std::string> readChartJs(const std::filesystem::path& path = kChartJsPath);

class DashboardPage {
public:
    // An empty `chartJs`: /chart.min.js answers 404 and the page says the charts are unavailable.
    explicit DashboardPage(std::string chartJs = {}) : m_chartJs(std::move(chartJs)) {}

    // "/", "/dashboard.js", "/dashboard.css" and "/chart.min.js".
    static bool serves(std::string_view path);
    // The file at `path`, with headers that keep the page to the node's own files; nullopt when
    // the path is not one of the dashboard's.
    std::optional<net::HttpAnswer> answer(std::string_view path) const;
    bool hasCharts() const { return !m_chartJs.empty(); }

private:
    std::string m_chartJs;
};

// Headers for the dashboard's answers (the page, its files and /dashboard.json): scripts, styles
// and fetches from the node alone, no framing, no caching of the live data.
void addDashboardHeaders(net::HttpAnswer& answer);

} // namespace goblin::labnode
