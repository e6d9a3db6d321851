#include "first_run_page.hpp"

#include "volunteer_state.hpp"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

#include "node_shares.hpp"

namespace goblin::volunteer {

FirstRunChoice firstRunDefaults(int hardwareThreads) {
    FirstRunChoice choice;
    choice.cpuCores = std::max(1, hardwareThreads / 2);
    return choice;
}

std::optional<QString> firstRunProblem(const FirstRunChoice& choice) {
    if (choice.nodeUrl.trimmed().isEmpty())
        return QStringLiteral("Enter the address of your lab's node, e.g. "
                              "wss://lab.example.org:8765 (your lab tells you which).");
    if (auto problem = nodeUrlProblem(choice.nodeUrl))
        return problem;
    const QString caFile = choice.caFile.trimmed();
    if (caFile.isEmpty())
        return std::nullopt;
    if (!choice.nodeUrl.trimmed().startsWith(QLatin1String("wss://")))
        return QStringLiteral("A CA file is only for wss:// (TLS) lab nodes: leave it empty for "
                              "%1, or use the wss:// address.")
            .arg(choice.nodeUrl.trimmed());
    const QFileInfo file(caFile);
    if (!file.isFile() || !file.isReadable())
        return QStringLiteral("Cannot read the CA file %1.").arg(caFile);
    return std::nullopt;
}

VolunteerSettings firstRunSettings(const FirstRunChoice& choice) {
    VolunteerSettings settings;
    settings.nodes.push_back(AttachedNode{choice.nodeUrl.trimmed(), 1});
    settings.caFile = choice.caFile.trimmed();
    settings.throttle.cpuCores = std::max(1, choice.cpuCores);
    settings.throttle.idleMinutes =
        choice.when == LendWhen::WhileIdle ? std::clamp(choice.idleMinutes, 1, 240) : 0;
    return settings;
}

FirstRunPage::FirstRunPage(int hardwareThreads, QWidget* parent) : QWidget(parent) {
    const FirstRunChoice defaults = firstRunDefaults(hardwareThreads);
    auto* intro = new QLabel(QStringLiteral(
        "<h2>Welcome to GPU Goblin</h2><p>Lend this computer's spare time to a lab. Say which lab "
        "node to work for and how much to lend; nothing is computed until you press "
        "<b>Start</b>. Everything can be changed later in Settings, and Pause is always one "
        "click away.</p>"));
    intro->setWordWrap(true);
    m_url = new QLineEdit;
    m_url->setObjectName(QStringLiteral("firstRunUrl"));
    m_url->setPlaceholderText(QStringLiteral("wss://lab.example.org:8765"));
    m_caFile = new QLineEdit;
    m_caFile->setObjectName(QStringLiteral("firstRunCaFile"));
    m_caFile->setPlaceholderText(
        QStringLiteral("optional; empty: the system's trusted certificates"));
    m_caFile->setToolTip(QStringLiteral("A PEM file with the CA certificate your lab gave you: "
                                        "wss:// lab nodes must show a certificate it signed."));
    m_cores = new QSpinBox;
    m_cores->setObjectName(QStringLiteral("firstRunCores"));
    m_cores->setRange(1, std::max(1, hardwareThreads));
    m_cores->setSuffix(QStringLiteral(" of %1").arg(coreCount(std::max(1, hardwareThreads))));
    m_cores->setValue(defaults.cpuCores);
    m_when = new QComboBox;
    m_when->setObjectName(QStringLiteral("firstRunWhen"));
    m_when->addItem(QStringLiteral("Only while I am not using the computer"),
                    static_cast<int>(LendWhen::WhileIdle));
    m_when->addItem(QStringLiteral("Always, also while I use it"),
                    static_cast<int>(LendWhen::Always));
    m_idleMinutes = new QSpinBox;
    m_idleMinutes->setObjectName(QStringLiteral("firstRunIdleMinutes"));
    m_idleMinutes->setRange(1, 240);
    m_idleMinutes->setSuffix(QStringLiteral(" min without keyboard or mouse"));
    m_idleMinutes->setValue(defaults.idleMinutes);
    m_message = new QLabel;
    m_message->setObjectName(QStringLiteral("firstRunMessage"));
    m_message->setWordWrap(true);
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    m_message->hide();
    auto* startButton = new QPushButton(QStringLiteral("Start"));
    startButton->setObjectName(QStringLiteral("firstRunStart"));
    startButton->setDefault(true);

    auto* form = new QFormLayout;
    form->addRow(QStringLiteral("Lab node address"), m_url);
    form->addRow(QStringLiteral("CA file for wss://"), m_caFile);
    form->addRow(QStringLiteral("CPU cores to lend"), m_cores);
    form->addRow(QStringLiteral("When to compute"), m_when);
    form->addRow(QStringLiteral("Idle means"), m_idleMinutes);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(m_message);
    layout->addStretch(1);
    layout->addWidget(startButton, 0, Qt::AlignRight);
    connect(m_when, &QComboBox::currentIndexChanged, this,
            [this] { m_idleMinutes->setEnabled(choice().when == LendWhen::WhileIdle); });
    connect(startButton, &QPushButton::clicked, this, &FirstRunPage::start);
    connect(m_url, &QLineEdit::returnPressed, this, &FirstRunPage::start);
}

void FirstRunPage::setNodeUrl(const QString& url) {
    m_url->setText(url.trimmed());
}

FirstRunChoice FirstRunPage::choice() const {
    FirstRunChoice choice;
    choice.nodeUrl = m_url->text().trimmed();
    choice.caFile = m_caFile->text().trimmed();
    choice.cpuCores = m_cores->value();
    choice.when = static_cast<LendWhen>(m_when->currentData().toInt());
    choice.idleMinutes = m_idleMinutes->value();
    return choice;
}

QString FirstRunPage::message() const {
    return m_message->text();
}

void FirstRunPage::start() {
    const FirstRunChoice chosen = choice();
    if (const auto problem = firstRunProblem(chosen)) {
        m_message->setText(*problem);
        m_message->show();
        return;
    }
    m_message->clear();
    m_message->hide();
    Q_EMIT completed(chosen);
}

} // namespace goblin::volunteer
