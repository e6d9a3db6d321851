#include "http/metrics_text.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace goblin::labnode {

Histogram::Histogram(std::vector<double> upperBounds)
    : m_bounds(std::move(upperBounds)), m_counts(m_bounds.size() + 1, 0) {
    assert(std::is_sorted(m_bounds.begin(), m_bounds.end()) && "histogram bounds must ascend");
}

void Histogram::observe(double value) {
    const auto bucket =
        std::lower_bound(m_bounds.begin(), m_bounds.end(), value) - m_bounds.begin();
    ++m_counts[static_cast<std::size_t>(bucket)];
    m_sum += value;
    ++m_count;
}

namespace {

std::string_view typeName(MetricsText::Type type) {
    switch (type) {
    case MetricsText::Type::Counter:
        return "counter";
    case MetricsText::Type::Gauge:
        return "gauge";
    case MetricsText::Type::Histogram:
        return "histogram";
    }
    return "untyped";
}

} // namespace

std::string MetricsText::escapeLabelValue(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (const char c : value) {
        if (c == '\\')
            out.append("\\\\");
        else if (c == '"')
            out.append("\\\"");
        else if (c == '\n')
            out.append("\\n");
        else
            out.push_back(c);
    }
    return out;
}

std::string MetricsText::escapeHelp(std::string_view help) {
    std::string out;
    for (const char c : help) {
        if (c == '\\')
            out.append("\\\\");
        else if (c == '\n')
            out.append("\\n");
        else
            out.push_back(c);
    }
    return out;
}

std::string MetricsText::formatValue(double value) {
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    char buffer[64];
    // Integers print as integers; everything else as short as round-trips (0.005, not 0.00500…1).
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        std::snprintf(buffer, sizeof buffer, "%.0f", value);
        return buffer;
    }
    std::snprintf(buffer, sizeof buffer, "%.15g", value);
    if (std::strtod(buffer, nullptr) != value)
        std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

void MetricsText::family(std::string_view name, std::string_view help, Type type) {
    m_text.append("# HELP ").append(name).append(" ").append(escapeHelp(help)).append("\n");
    m_text.append("# TYPE ").append(name).append(" ").append(typeName(type)).append("\n");
}

void MetricsText::sample(std::string_view name, const Labels& labels, double value) {
    m_text.append(name);
    if (!labels.empty()) {
        m_text.push_back('{');
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (i > 0)
                m_text.push_back(',');
            m_text.append(labels[i].first).append("=\"");
            m_text.append(escapeLabelValue(labels[i].second)).append("\"");
        }
        m_text.push_back('}');
    }
    m_text.append(" ").append(formatValue(value)).append("\n");
}

void MetricsText::histogram(std::string_view name, std::string_view help,
                            const Histogram& histogram) {
    family(name, help, Type::Histogram);
    const std::string bucket = std::string(name).append("_bucket");
    std::uint64_t cumulative = 0;
    const auto& bounds = histogram.upperBounds();
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += histogram.counts()[i];
        sample(bucket, {{"le", formatValue(bounds[i])}}, static_cast<double>(cumulative));
    }
    cumulative += histogram.counts().back();
    sample(bucket, {{"le", "+Inf"}}, static_cast<double>(cumulative));
    sample(std::string(name).append("_sum"), histogram.sum());
    sample(std::string(name).append("_count"), static_cast<double>(histogram.count()));
}

} // namespace goblin::labnode
