// Entry point of the desktop app, called by main.cpp when --headless is not given.
#pragma once

#include <QString>

namespace goblin::volunteer {

int runGui(int& argc, char** argv, const QString& nodeUrl, const QString& configDir,
           bool minimized);

} // namespace goblin::volunteer
