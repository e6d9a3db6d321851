#include "gemm_tuning_store.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "goblin/compute/gemm_calibration.hpp"

namespace goblin::volunteer {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::string deviceKey(const compute::OpenClDeviceInfo& device) {
    return device.platform + " | " + device.name + " | " + device.driverVersion;
}

json::object readAll(const fs::path& path) {
    std::ifstream in(path);
    if (!in)
        return {};
    std::stringstream text;
    text << in.rdbuf();
    boost::system::error_code ec;
    json::value value = json::parse(text.str(), ec);
    if (ec || !value.is_object())
        return {};
    return value.get_object();
}

} // namespace

GemmTuningStore::GemmTuningStore(fs::path configDir)
    : m_path(std::move(configDir) / "clblast-tuning.json") {}

std::optional<StoredTuning> GemmTuningStore::load(const compute::OpenClDeviceInfo& device,
                                                  core::DType dtype) const {
    const json::object all = readAll(m_path);
    const auto* entry = all.if_contains(deviceKey(device));
    if (!entry || !entry->is_object())
        return std::nullopt;
    const auto* tuning = entry->get_object().if_contains(std::string(core::wireName(dtype)));
    if (!tuning || !tuning->is_object())
        return std::nullopt;
    const json::object& fields = tuning->get_object();
    const auto* text = fields.if_contains("xgemm");
    if (!text || !text->is_string())
        return std::nullopt;
    auto parameters = compute::parseGemmParameters(std::string(text->get_string()));
    if (!parameters)
        return std::nullopt;
    StoredTuning stored{std::move(*parameters), 0.0, 0.0};
    if (const auto* g = fields.if_contains("gflops"); g && g->is_number())
        stored.gflops = g->to_number<double>();
    if (const auto* g = fields.if_contains("default_gflops"); g && g->is_number())
        stored.defaultGflops = g->to_number<double>();
    return stored;
}

Expected<void> GemmTuningStore::save(const compute::OpenClDeviceInfo& device, core::DType dtype,
                                     const StoredTuning& tuning) {
    json::object all = readAll(m_path);
    json::value& entry = all[deviceKey(device)];
    if (!entry.is_object())
        entry = json::object{};
    entry.get_object()[std::string(core::wireName(dtype))] =
        json::object{{"xgemm", compute::formatGemmParameters(tuning.parameters)},
                     {"gflops", tuning.gflops},
                     {"default_gflops", tuning.defaultGflops}};
    std::error_code ec;
    fs::create_directories(m_path.parent_path(), ec);
    const fs::path temporary = m_path.string() + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out)
            return makeError(ErrorCode::Internal, "cannot write " + temporary.string());
        out << json::serialize(all) << '\n';
    }
    fs::rename(temporary, m_path, ec);
    if (ec)
        return makeError(ErrorCode::Internal,
                         "cannot save " + m_path.string() + ": " + ec.message());
    return {};
}

} // namespace goblin::volunteer
