// The first-run page (GUI thread): shown instead of the tabs while no settings exist yet. Asks
// which lab node (address, an optional CA file for wss://) and how much to lend, starting from
// conservative defaults — compute only while the computer is idle, half the cores — the way
// BOINC's wizard and Folding@home's idle default start. Nothing computes until it is completed.
#pragma once

#include <QString>
#include <QWidget>

#include <optional>

#include "settings_store.hpp"

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace goblin::volunteer {

enum class LendWhen { WhileIdle, Always };

struct FirstRunChoice {
    QString nodeUrl;
    QString caFile; // empty: the system's trusted certificates
    int cpuCores = 1;
    LendWhen when = LendWhen::WhileIdle;
    int idleMinutes = 3; // with WhileIdle: no input for this long before computing starts
};

// The defaults a new volunteer starts from: while idle (3 minutes, BOINC's "in use" window),
// half of the hardware threads (at least one).
FirstRunChoice firstRunDefaults(int hardwareThreads);

// Why the choice cannot be used (a bad address, a CA file that is unreadable or given for a
// ws:// node), or nothing.
std::optional<QString> firstRunProblem(const FirstRunChoice& choice);

// The settings a first run starts from: the defaults, with the chosen node, CA file, cores and
// idle rule.
VolunteerSettings firstRunSettings(const FirstRunChoice& choice);

class FirstRunPage : public QWidget {
    Q_OBJECT
public:
    explicit FirstRunPage(int hardwareThreads, QWidget* parent = nullptr);
    void setNodeUrl(const QString& url); // the --node address, offered as the answer
    FirstRunChoice choice() const;
    QString message() const;

Q_SIGNALS:
    // Start was pressed with a usable choice.
    void completed(const goblin::volunteer::FirstRunChoice& choice);

private:
    void start();

    QLineEdit* m_url;
    QLineEdit* m_caFile;
    QSpinBox* m_cores;
    QComboBox* m_when;
    QSpinBox* m_idleMinutes;
    QLabel* m_message;
};

} // namespace goblin::volunteer
