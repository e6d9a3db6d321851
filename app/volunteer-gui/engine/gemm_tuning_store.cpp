#include "gemm_tuning_store.hpp"

#include <boost/json.hpp>

#include "goblin/compute/gemm_calibration.hpp"
#include "json_file.hpp"

namespace goblin::volunteer {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::string deviceKey(const compute::OpenClDeviceInfo& device) {
    return device.platform + " | " + device.name + " | " + device.driverVersion;
}

} // namespace

GemmTuningStore::GemmTuningStore(fs::path configDir)
    : m_path(std::move(configDir) / "clblast-tuning.json") {}

std::optional<StoredTuning> GemmTuningStore::load(const compute::OpenClDeviceInfo& device,
                                                  core::DType dtype) const {
    const json::object all = readJsonObject(m_path);
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
    json::object all = readJsonObject(m_path);
    json::value& entry = all[deviceKey(device)];
    if (!entry.is_object())
        entry = json::object{};
    entry.get_object()[std::string(core::wireName(dtype))] =
        json::object{{"xgemm", compute::formatGemmParameters(tuning.parameters)},
                     {"gflops", tuning.gflops},
                     {"default_gflops", tuning.defaultGflops}};
    return writeJsonObject(m_path, all);
}

} // namespace goblin::volunteer
