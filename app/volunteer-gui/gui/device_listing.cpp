#include "device_listing.hpp"

#include <QProcess>

#include "device_choice.hpp"

namespace goblin::volunteer {

Expected<std::vector<compute::OpenClDeviceInfo>> listDevicesInChild(const QString& program) {
    QProcess child;
    child.start(program, {QStringLiteral("--list-devices-tsv")});
    if (!child.waitForFinished(60'000) || child.exitStatus() != QProcess::NormalExit ||
        child.exitCode() != 0) {
        child.kill();
        child.waitForFinished(5000);
        return makeError(ErrorCode::Internal, "listing the OpenCL devices failed (" +
                                                  child.errorString().toStdString() +
                                                  "); the CPU computes");
    }
    return parseDeviceLines(child.readAllStandardOutput().toStdString());
}

} // namespace goblin::volunteer
