// A lab node's Coordinator driven by fake peers: one researcher and volunteers that answer the
// task frames they were sent (honestly, or as told), all on the test's thread through the harness.
#pragma once

#include <map>

#include "node/coordinator.hpp"
#include "node/secrets.hpp"
#include "node_harness.hpp"

namespace goblin::labnode::testing {

struct FakeVolunteer {
    std::uint64_t peer = 0;
    std::shared_ptr<FakePeerLink> link;
    std::size_t answered = 0; // task frames answered so far

    std::vector<net::Message> unanswered() const {
        auto tasks = link->sentOfType("task");
        return {tasks.begin() + static_cast<std::ptrdiff_t>(std::min(answered, tasks.size())),
                tasks.end()};
    }
    std::string id() const {
        return std::string(link->sentOfType("welcome").at(0).control.at("volunteer").as_string());
    }
    std::vector<std::string> verdicts() const {
        std::vector<std::string> words;
        for (const auto& verdict : link->sentOfType("verdict"))
            words.emplace_back(verdict.control.at("verdict").as_string());
        return words;
    }
};

class FakeCluster {
    NodeHarness& m_node;
    std::uint64_t m_nextPeer = 1;

public:
    FakeCluster(NodeHarness& node, CoordinatorSettings settings)
        : m_node(node), coordinator(node.context(), settings) {
        coordinator.start();
    }
    // What the roles posted to the workers and the core thread runs before they go (a worker
    // still merging for one of them would read a role that is gone).
    ~FakeCluster() { m_node.settle(); }
    FakeCluster(const FakeCluster&) = delete;
    FakeCluster& operator=(const FakeCluster&) = delete;

    std::shared_ptr<FakePeerLink> connectResearcher(const std::string& token = "tok") {
        if (!m_node.store.researcherByTokenHash(hashSecret(token))) {
            std::string email = std::to_string(m_nextPeer); // (GCC 12 misreads "r" + to_string)
            email.append("@lab.example");
            (void)m_node.store.addResearcher(email, hashSecret(token));
        }
        auto link = std::make_shared<FakePeerLink>();
        const std::uint64_t peer = m_nextPeer++;
        coordinator.onConnected(peer, link, PeerRole::Researcher);
        coordinator.onMessage(peer, researcherHello(token));
        researcherPeer = peer;
        return link;
    }

    FakeVolunteer& connectVolunteer(int slots, bool graphs,
                                    const std::string& backend = "cpu-eigen",
                                    const std::string& address = "127.0.0.1",
                                    std::int64_t memoryBytes = std::int64_t{1} << 30,
                                    int protocol = 1) {
        FakeVolunteer volunteer;
        volunteer.peer = m_nextPeer++;
        volunteer.link = std::make_shared<FakePeerLink>();
        volunteer.link->setAddress(address);
        coordinator.onConnected(volunteer.peer, volunteer.link, PeerRole::Volunteer);
        coordinator.onMessage(volunteer.peer,
                              volunteerHello(slots, graphs, backend, memoryBytes, protocol));
        return volunteers.emplace(volunteer.peer, std::move(volunteer)).first->second;
    }

    void disconnect(std::uint64_t peer) {
        coordinator.onClosed(peer, Error{ErrorCode::Timeout, "gone"});
        volunteers.erase(peer);
    }

    void fromResearcher(net::Message message) {
        coordinator.onMessage(researcherPeer, std::move(message));
    }

    // Answers every unanswered task frame of `volunteer` with `answer(task) -> result message`.
    template <class Answer> void answer(FakeVolunteer& volunteer, Answer&& answerFor) {
        for (const net::Message& task : volunteer.unanswered()) {
            ++volunteer.answered;
            coordinator.onMessage(volunteer.peer, answerFor(task));
        }
    }

    Coordinator coordinator;
    std::map<std::uint64_t, FakeVolunteer> volunteers;
    std::uint64_t researcherPeer = 0;
};

inline net::Message resultFor(const net::Message& task, std::vector<net::TensorPtr> outputs,
                              const std::string& backend = "cpu-eigen") {
    return net::Message{boost::json::object{{"type", "result"},
                                            {"op", task.control.at("op")},
                                            {"task", task.control.at("task")},
                                            {"attempt", task.control.at("attempt")},
                                            {"backend", backend},
                                            {"compute_seconds", 0.01}},
                        std::move(outputs)};
}

} // namespace goblin::labnode::testing
