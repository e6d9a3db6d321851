#include "http/dashboard_page.hpp"

#include <fstream>
#include <sstream>
#include <system_error>

#include "goblin_dashboard/dashboard_css.hpp"
#include "goblin_dashboard/dashboard_js.hpp"
#include "goblin_dashboard/index_html.hpp"

namespace goblin::labnode {

Expected<std::string> readChartJs(const std::filesystem::path& path) {
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    if (error)
        return makeError(ErrorCode::NotFound, path.string() + ": " + error.message() +
                                                  " (the libjs-chart.js package installs it)");
    if (size == 0 || size > kMaxChartJsBytes)
        return makeError(ErrorCode::LimitExceeded,
                         path.string() + ": " + std::to_string(size) +
                             " bytes, not a Chart.js build (expected 1 byte to 4 MiB)");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in)
        return makeError(ErrorCode::Internal, path.string() + ": cannot be read");
    return text.str();
}

void addDashboardHeaders(net::HttpAnswer& answer) {
    answer.headers = {
        {"Content-Security-Policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
         "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"},
        {"X-Content-Type-Options", "nosniff"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "no-referrer"},
        {"Cache-Control", "no-store"},
    };
}

bool DashboardPage::serves(std::string_view path) {
    return path == "/" || path == "/dashboard.js" || path == "/dashboard.css" ||
           path == "/chart.min.js";
}

std::optional<net::HttpAnswer> DashboardPage::answer(std::string_view path) const {
    net::HttpAnswer answer;
    if (path == "/")
        answer = {200, "text/html; charset=utf-8", std::string(web::kIndexHtml)};
    else if (path == "/dashboard.js")
        answer = {200, "text/javascript; charset=utf-8", std::string(web::kDashboardJs)};
    else if (path == "/dashboard.css")
        answer = {200, "text/css; charset=utf-8", std::string(web::kDashboardCss)};
    else if (path == "/chart.min.js" && hasCharts())
        answer = {200, "text/javascript; charset=utf-8", m_chartJs};
    else if (path != "/chart.min.js")
        return std::nullopt;
    addDashboardHeaders(answer);
    return answer;
}

} // namespace goblin::labnode
