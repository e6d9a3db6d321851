// Prometheus text exposition format (version 0.0.4): metric families with HELP and TYPE lines,
// samples with escaped label values, and a cumulative histogram. Plain values; the node's
// histogram lives on the core thread with the database it times.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace goblin::labnode {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Observations counted into buckets by upper bound (seconds); `+Inf` is implied.
class Histogram {
public:
    explicit Histogram(std::vector<double> upperBounds);
    void observe(double value);

    const std::vector<double>& upperBounds() const { return m_bounds; }
    // Per bucket, not cumulative; one more entry than upperBounds() (the +Inf bucket).
    const std::vector<std::uint64_t>& counts() const { return m_counts; }
    double sum() const { return m_sum; }
    std::uint64_t count() const { return m_count; }

private:
    std::vector<double> m_bounds;
    std::vector<std::uint64_t> m_counts;
    double m_sum = 0;
    std::uint64_t m_count = 0;
};

class MetricsText {
public:
    enum class Type { Counter, Gauge, Histogram };

    // Starts a family: `# HELP name help` and `# TYPE name type`.
    void family(std::string_view name, std::string_view help, Type type);
    void sample(std::string_view name, const Labels& labels, double value);
    void sample(std::string_view name, double value) { sample(name, {}, value); }
    // A whole histogram family: cumulative `_bucket{le=…}` lines, then `_sum` and `_count`.
    void histogram(std::string_view name, std::string_view help, const Histogram& histogram);

    const std::string& text() const { return m_text; }

    // Label values escape backslash, double quote and newline; HELP text backslash and newline.
    static std::string escapeLabelValue(std::string_view value);
    static std::string escapeHelp(std::string_view help);
    static std::string formatValue(double value);

private:
    std::string m_text;
};

} // namespace goblin::labnode
