// A fake utmp file and /dev folder for the terminal idle probe: user sessions whose terminals
// were last used at given epoch seconds. Test thread only.
#pragma once

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utmpx.h>

namespace goblin::volunteer::testing {

class UtmpFixture {
public:
    std::filesystem::path utmp() const { return root() / "utmp"; }
    std::filesystem::path dev() const { return root() / "dev"; }

    // A record of `type` for `line`, of process `pid` (this one's by default).
    void addRecord(short type, const std::string& line, pid_t pid = ::getpid()) {
        utmpx entry{};
        entry.ut_type = type;
        entry.ut_pid = pid;
        std::strncpy(entry.ut_line, line.c_str(), sizeof entry.ut_line - 1);
        std::strncpy(entry.ut_user, "alice", sizeof entry.ut_user - 1);
        std::ofstream file(utmp(), std::ios::binary | std::ios::app);
        file.write(reinterpret_cast<const char*>(&entry), sizeof entry);
    }
    // A terminal device file under dev/ last read at `atime` (epoch seconds).
    void addTerminal(const std::string& line, double atime) {
        const auto path = dev() / line;
        std::filesystem::create_directories(path.parent_path());
        std::ofstream(path).put('\n');
        timespec times[2]{};
        times[0].tv_sec = static_cast<time_t>(atime);
        times[1].tv_nsec = UTIME_OMIT;
        QVERIFY(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
    }
    void addSession(const std::string& line, double atime) {
        addRecord(USER_PROCESS, line);
        addTerminal(line, atime);
    }

private:
    QTemporaryDir m_dir;
    std::filesystem::path root() const { return m_dir.path().toStdString(); }
};

} // namespace goblin::volunteer::testing
