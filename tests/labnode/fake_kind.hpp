// A job kind for the scheduler's and the researcher desk's tests: a queue of task ids (claims skip
// what the scheduler's filter refuses), a fresh attempt per claim, and a record of every call the
// shared roles make.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

#include "work/job_kind.hpp"

namespace goblin::labnode::testing {

class FakeKind final : public JobKind {
public:
    explicit FakeKind(std::string op = "fake") : m_op(std::move(op)) {}

    std::string_view taskOp() const override { return m_op; }
    std::string_view submitType() const override { return submitName; }
    int minimumCatalog() const override { return catalog; }
    bool ownsJob(std::string_view jobId) const override { return jobId.starts_with(prefix); }

    void recover() override { ++recovered; }
    void submit(const ResearcherRequest& request, net::Message message) override {
        submitted.push_back({request, std::move(message)});
    }
    void fetch(const ResearcherRequest& request, const std::string& jobId) override {
        fetched.push_back({request, jobId});
    }
    void audit(const ResearcherRequest& request, const std::string& jobId) override {
        audited.push_back({request, jobId});
    }
    void release(const ResearcherRequest& request, const std::string& jobId) override {
        released.push_back({request, jobId});
    }
    Expected<void> cancel(const std::string& jobId, const std::string& who) override {
        cancelled.push_back({jobId, who});
        return {};
    }
    Expected<void> purge(const std::string& jobId) override {
        purged.push_back(jobId);
        return {};
    }

    bool hasQueued() const override { return !queue.empty(); }
    std::optional<TaskClaim> claimTaskFor(const Peer& volunteer,
                                          const TaskFilter& mayTake) override {
        if (volunteer.volunteer.volunteerId == refuses)
            return std::nullopt;
        for (auto it = queue.begin(); it != queue.end(); ++it) {
            if (!mayTake(*it))
                continue;
            const std::int64_t task = *it;
            queue.erase(it);
            return TaskClaim{task, ++attempts[task]};
        }
        return std::nullopt;
    }
    TaskFrame taskFrame(const Lease& lease) override {
        return TaskFrame{
            [op = m_op, task = lease.task, attempt = lease.attempt]() -> Expected<net::Message> {
                return net::Message{
                    boost::json::object{
                        {"type", "task"}, {"op", op}, {"task", task}, {"attempt", attempt}},
                    {}};
            },
            heavyFrames};
    }
    void onResult(const Lease& lease, net::Message) override { results.push_back(lease); }
    void onLeaseLost(const Lease& lease, LeaseLoss why, const std::string& detail) override {
        lost.push_back({lease, why, detail});
        queue.push_front(lease.task);
    }
    // Records the call and takes the task off the queue, as a kind does.
    void computeOnNode(std::int64_t task) override {
        computedOnNode.push_back(task);
        std::erase(queue, task);
    }

    struct Loss {
        Lease lease;
        LeaseLoss why;
        std::string detail;
    };
    struct Submitted {
        ResearcherRequest request;
        net::Message message;
    };
    struct Named {
        ResearcherRequest request;
        std::string jobId;
    };

    std::string submitName = "submit_fake";
    std::string prefix = "f-";
    int catalog = 1;
    std::string refuses; // a volunteer id this kind never gives a task
    bool heavyFrames = false;
    std::deque<std::int64_t> queue;
    std::map<std::int64_t, std::int64_t> attempts;
    std::vector<Lease> results;
    std::vector<Loss> lost;
    std::vector<std::int64_t> computedOnNode;
    std::vector<Submitted> submitted;
    std::vector<Named> fetched, released, audited;
    std::vector<std::pair<std::string, std::string>> cancelled; // job, who
    std::vector<std::string> purged;
    int recovered = 0;

private:
    std::string m_op;
};

} // namespace goblin::labnode::testing
