#include "device_choice.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include <boost/json/object.hpp>

namespace goblin::volunteer {
namespace json = boost::json;

namespace {

std::string gib(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
    return text;
}

std::string padded(std::string text, std::size_t width) {
    if (text.size() > width)
        text = text.substr(0, width - 1) + "~";
    text.resize(width, ' ');
    return text;
}

} // namespace

Expected<DeviceChoice> parseDeviceChoice(const std::string& text) {
    DeviceChoice choice;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        start = comma + 1;
        int index = -1;
        if (item == "cpu") {
            if (choice.cpu)
                return makeError(ErrorCode::InvalidInput, "--devices names cpu twice");
            choice.cpu = true;
            continue;
        }
        const char* end = item.data() + item.size();
        const bool named = item.size() >= 4 && item.compare(0, 3, "gpu") == 0;
        if (!named || std::from_chars(item.data() + 3, end, index).ptr != end || index < 0 ||
            index > 63)
            return makeError(ErrorCode::InvalidInput,
                             "--devices takes cpu and gpu0, gpu1, …; not '" + item + "'");
        if (std::find(choice.gpus.begin(), choice.gpus.end(), index) != choice.gpus.end())
            return makeError(ErrorCode::InvalidInput, "--devices names " + item + " twice");
        choice.gpus.push_back(index);
    }
    return choice;
}

bool isOpenClCpuDevice(const compute::OpenClDeviceInfo& device) {
    return device.type == "cpu";
}

std::vector<compute::OpenClDeviceInfo>
gpuDevices(const std::vector<compute::OpenClDeviceInfo>& devices, OpenClCpuDevices cpuDevices) {
    std::vector<compute::OpenClDeviceInfo> gpus;
    for (const auto& device : devices)
        if (cpuDevices == OpenClCpuDevices::Offer || !isOpenClCpuDevice(device))
            gpus.push_back(device);
    return gpus;
}

std::string formatDeviceTable(const CpuDescription& cpu,
                              const Expected<std::vector<compute::OpenClDeviceInfo>>& devices) {
    std::string table = padded("DEVICE", 7) + padded("BACKEND", 16) + padded("NAME", 44) +
                        padded("VENDOR / DRIVER", 34) + padded("MEMORY", 10) +
                        padded("MAX ALLOC", 10) + padded("UNITS", 6) + "FP64 FP16\n";
    const std::string cpuName =
        "CPU (Eigen + OpenBLAS" + (cpu.blasKernel.empty() ? "" : " " + cpu.blasKernel) + ")";
    table += padded("cpu", 7) + padded("cpu-eigen", 16) + padded(cpuName, 44) + padded("-", 34) +
             padded(gib(static_cast<std::uint64_t>(cpu.memoryBytes)), 10) + padded("-", 10) +
             padded(std::to_string(cpu.threads), 6) + "yes  no\n";
    if (!devices)
        return table + "OpenCL: " + devices.error().message + "; the CPU backend still works\n";
    if (devices->empty())
        return table + "OpenCL: no platform or device found; the CPU backend still works\n";
    for (const auto& device : *devices) {
        table += padded("gpu" + std::to_string(device.index), 7) + padded("opencl-clblast", 16) +
                 padded(device.name + " (" + device.type + ")", 44) +
                 padded(device.vendor + " / " + device.driverVersion, 34) +
                 padded(gib(device.globalMemoryBytes), 10) + padded(gib(device.maxAllocBytes), 10) +
                 padded(std::to_string(device.computeUnits), 6) +
                 (device.fp64 ? "yes  " : "no   ") + (device.fp16 ? "yes" : "no") + "\n";
    }
    for (const auto& device : *devices)
        if (isOpenClCpuDevice(device))
            table.append("note: gpu")
                .append(std::to_string(device.index))
                .append(" is an OpenCL CPU device, not a GPU: it runs on the same cores as the cpu "
                        "backend (the desktop app does not offer it; --devices may still name "
                        "it)\n");
    return table;
}

namespace {

std::string oneField(std::string text) {
    for (char& c : text)
        if (c == '\t' || c == '\n' || c == '\r')
            c = ' ';
    return text.substr(0, 256);
}

std::vector<std::string> splitTabs(const std::string& line) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (;;) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab - start));
        if (tab == std::string::npos)
            return fields;
        start = tab + 1;
    }
}

} // namespace

std::string formatDeviceLines(const Expected<std::vector<compute::OpenClDeviceInfo>>& devices) {
    if (!devices)
        return "error\t" + oneField(devices.error().message) + "\n";
    std::string text = "ok\n";
    for (const auto& device : *devices)
        text.append(std::to_string(device.index))
            .append("\t")
            .append(oneField(device.type))
            .append("\t")
            .append(oneField(device.name))
            .append("\t")
            .append(oneField(device.vendor))
            .append("\n");
    return text;
}

Expected<std::vector<compute::OpenClDeviceInfo>> parseDeviceLines(const std::string& text) {
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    if (lines.empty())
        return makeError(ErrorCode::InvalidInput, "the device listing printed nothing");
    if (lines[0].rfind("error\t", 0) == 0)
        return makeError(ErrorCode::Internal, lines[0].substr(6));
    if (lines[0] != "ok")
        return makeError(ErrorCode::InvalidInput, "unexpected device listing: " + lines[0]);
    std::vector<compute::OpenClDeviceInfo> devices;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto fields = splitTabs(lines[i]);
        compute::OpenClDeviceInfo device;
        const char* end = fields[0].data() + fields[0].size();
        if (fields.size() != 4 || std::from_chars(fields[0].data(), end, device.index).ptr != end ||
            device.index < 0 || device.index > 63)
            return makeError(ErrorCode::InvalidInput, "unexpected device line: " + lines[i]);
        device.type = fields[1];
        device.name = fields[2];
        device.vendor = fields[3];
        devices.push_back(std::move(device));
    }
    return devices;
}

json::array describeDevices(const CpuDescription& cpu, const compute::OpenClDeviceInfo* device) {
    json::array list;
    list.push_back(json::object{{"id", "cpu"},
                                {"backend", "cpu-eigen"},
                                {"threads", cpu.threads},
                                {"memory_bytes", cpu.memoryBytes},
                                {"fp64", true}});
    if (device)
        list.push_back(json::object{{"id", "gpu" + std::to_string(device->index)},
                                    {"backend", "opencl-clblast"},
                                    {"name", device->name.substr(0, 128)},
                                    {"vendor", device->vendor.substr(0, 128)},
                                    {"driver", device->driverVersion.substr(0, 64)},
                                    {"type", device->type},
                                    {"memory_bytes", device->globalMemoryBytes},
                                    {"max_alloc_bytes", device->maxAllocBytes},
                                    {"compute_units", device->computeUnits},
                                    {"fp64", device->fp64},
                                    {"fp16", device->fp16}});
    return list;
}

} // namespace goblin::volunteer
