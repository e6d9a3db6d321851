#include "store/schema.hpp"

#include <optional>
#include <string>

namespace goblin::labnode {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS researchers(
  id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, token_hash TEXT NOT NULL UNIQUE,
  created_at REAL NOT NULL DEFAULT (unixepoch()));
CREATE TABLE IF NOT EXISTS volunteers(
  id TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, created_at REAL NOT NULL, last_seen REAL,
  backend TEXT, accepted INTEGER NOT NULL DEFAULT 0, rejected INTEGER NOT NULL DEFAULT 0,
  banned INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS jobs(
  id TEXT PRIMARY KEY, researcher_id INTEGER NOT NULL REFERENCES researchers(id), kind TEXT NOT NULL,
  dtype TEXT NOT NULL, m INTEGER NOT NULL, k INTEGER NOT NULL, n INTEGER NOT NULL,
  tile_rows INTEGER NOT NULL, tile_cols INTEGER NOT NULL, a_blob TEXT NOT NULL, b_blob TEXT NOT NULL,
  state TEXT NOT NULL, created_at REAL NOT NULL, finished_at REAL);
CREATE TABLE IF NOT EXISTS tasks(
  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL REFERENCES jobs(id), row0 INTEGER NOT NULL,
  col0 INTEGER NOT NULL, rows INTEGER NOT NULL, cols INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued', attempt INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS tasks_by_job ON tasks(job_id);
CREATE TABLE IF NOT EXISTS leases(
  task_id INTEGER NOT NULL, attempt INTEGER NOT NULL, volunteer_id TEXT NOT NULL,
  leased_at REAL NOT NULL, deadline REAL NOT NULL, PRIMARY KEY(task_id, attempt));
CREATE TABLE IF NOT EXISTS results(
  task_id INTEGER NOT NULL, attempt INTEGER NOT NULL, volunteer_id TEXT NOT NULL, backend TEXT,
  verdict TEXT NOT NULL, method TEXT NOT NULL, error_ratio REAL, residual REAL, bound REAL,
  reason TEXT, verify_seconds REAL, compute_seconds REAL, created_at REAL NOT NULL,
  threshold REAL, PRIMARY KEY(task_id, attempt));
-- A tile is merged at most once: the database refuses a second accepted result for a task.
CREATE UNIQUE INDEX IF NOT EXISTS one_accepted_result ON results(task_id) WHERE verdict = 'accepted';
-- Graph jobs (schema version 2): every task is computed by two volunteers and compared; each
-- replica's verdict is recorded, with the method that decided it.
-- request: the submit_graph fields {graph, batch}; inputs and outputs: JSON lists of stored
-- tensors {digest, dtype, shape} (blobs), so a restarted node resumes running graph jobs.
-- A row is a group of graph tasks: a researcher's graph job (owner_job NULL), or round
-- owner_round of the training job owner_job (schema version 5), which alone fetches, releases,
-- cancels, purges and lists it.
CREATE TABLE IF NOT EXISTS graph_jobs(
  id TEXT PRIMARY KEY, researcher_id INTEGER NOT NULL REFERENCES researchers(id),
  tasks INTEGER NOT NULL, request TEXT NOT NULL, inputs TEXT NOT NULL, state TEXT NOT NULL,
  created_at REAL NOT NULL, finished_at REAL, owner_job TEXT, owner_round INTEGER);
CREATE TABLE IF NOT EXISTS graph_tasks(
  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL REFERENCES graph_jobs(id), chunk INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued', outputs TEXT);
CREATE TABLE IF NOT EXISTS graph_results(
  task_id INTEGER NOT NULL REFERENCES graph_tasks(id), attempt INTEGER NOT NULL,
  volunteer_id TEXT NOT NULL, backend TEXT, verdict TEXT NOT NULL, method TEXT NOT NULL,
  disagreement_ratio REAL, reason TEXT, compute_seconds REAL, created_at REAL NOT NULL,
  PRIMARY KEY(task_id, attempt));
-- Leases of every job kind (schema version 3; `leases` above is version 1's, for matmul tasks):
-- an attempt number is leased once, so replays and restarts never reuse one.
CREATE TABLE IF NOT EXISTS task_leases(
  kind TEXT NOT NULL, task_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
  volunteer_id TEXT NOT NULL, leased_at REAL NOT NULL, deadline REAL NOT NULL,
  PRIMARY KEY(kind, task_id, attempt));
-- Leases lost without an answer (why: expired, disconnected, task_error): the volunteer never gets
-- that task again, and a task that expired --max-task-expiries times is computed by the node.
CREATE TABLE IF NOT EXISTS lease_losses(
  kind TEXT NOT NULL, task_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
  volunteer_id TEXT NOT NULL, why TEXT NOT NULL, at REAL NOT NULL,
  PRIMARY KEY(kind, task_id, attempt));
-- Trust: how much extra checking a volunteer gets. audits_passed counts its results the
-- node recomputed and found right; a volunteer caught once is quarantined for good.
CREATE TABLE IF NOT EXISTS volunteer_trust(
  volunteer_id TEXT PRIMARY KEY, audits_passed INTEGER NOT NULL DEFAULT 0,
  expiries INTEGER NOT NULL DEFAULT 0, quarantined_at REAL, quarantine_reason TEXT);
-- Registrations per network address, for the rate limit on new identities.
CREATE TABLE IF NOT EXISTS registrations(address TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS registrations_by_address ON registrations(address, at);
-- Volunteers lab staff approved (`serve --volunteers approved` admits only these to work).
CREATE TABLE IF NOT EXISTS volunteer_approvals(volunteer_id TEXT PRIMARY KEY, approved_at REAL NOT NULL);
-- Audits of delivered graph jobs: a volunteer whose accepted results a delivered job used was
-- quarantined afterwards; the node recomputes those tasks (state: rechecking, stands, corrected,
-- unverifiable when the job's data was already deleted).
CREATE TABLE IF NOT EXISTS graph_job_audits(
  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL REFERENCES graph_jobs(id),
  volunteer_id TEXT NOT NULL, reason TEXT NOT NULL, state TEXT NOT NULL,
  tasks INTEGER NOT NULL DEFAULT 0, corrected INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL, finished_at REAL);
CREATE INDEX IF NOT EXISTS graph_job_audits_by_job ON graph_job_audits(job_id);
-- Volunteers lab staff banned (`volunteers ban|unban`): refused at hello while lifted_at is NULL.
CREATE TABLE IF NOT EXISTS volunteer_bans(
  volunteer_id TEXT PRIMARY KEY REFERENCES volunteers(id), banned_at REAL NOT NULL,
  reason TEXT NOT NULL, lifted_at REAL);
-- Researcher credentials lab staff revoked (`researchers revoke`): refused at the next hello.
CREATE TABLE IF NOT EXISTS researcher_revocations(
  researcher_id INTEGER PRIMARY KEY REFERENCES researchers(id), revoked_at REAL NOT NULL);
-- Per-researcher quotas lab staff set (`researchers quota`): a NULL column, or no row, is the
-- node's default (store/researcher_quotas.hpp). Created by the schema above on any database.
CREATE TABLE IF NOT EXISTS researcher_quotas(
  researcher_id INTEGER PRIMARY KEY REFERENCES researchers(id), max_bytes INTEGER,
  max_flops REAL, max_running_jobs INTEGER, updated_at REAL NOT NULL);
-- Training jobs: the request ({"graph", "train"}), its stored input tensors (x and y
-- with every sample), the current flat parameters then the optimizer state (stored tensors,
-- replaced as each round commits), the rounds committed and the graph job of the round in flight.
CREATE TABLE IF NOT EXISTS train_jobs(
  id TEXT PRIMARY KEY, researcher_id INTEGER NOT NULL REFERENCES researchers(id),
  state TEXT NOT NULL, request TEXT NOT NULL, inputs TEXT NOT NULL, params TEXT NOT NULL,
  rounds_done INTEGER NOT NULL DEFAULT 0, round_job TEXT, error TEXT,
  created_at REAL NOT NULL, updated_at REAL NOT NULL);
-- One row per committed round of a training job (loss as float32's exact value).
CREATE TABLE IF NOT EXISTS train_rounds(
  job_id TEXT NOT NULL REFERENCES train_jobs(id), round INTEGER NOT NULL, loss REAL NOT NULL,
  grad_norm REAL NOT NULL, tasks INTEGER NOT NULL, rejected INTEGER NOT NULL,
  node_audited INTEGER NOT NULL, node_decided INTEGER NOT NULL, seconds REAL NOT NULL,
  verification_seconds REAL NOT NULL, graph_job TEXT NOT NULL, PRIMARY KEY(job_id, round));
-- A running training job's state before each of its rounds (stored tensors, as train_jobs.params),
-- so that a round found poisoned after it committed is trained again from the state before it
-- (kinds/train/training_rewind); dropped when the job ends. And every such rewind: rounds
-- [first_round, end_round) were trained again, and why.
CREATE TABLE IF NOT EXISTS train_snapshots(
  job_id TEXT NOT NULL REFERENCES train_jobs(id), round INTEGER NOT NULL, params TEXT NOT NULL,
  PRIMARY KEY(job_id, round));
CREATE TABLE IF NOT EXISTS train_rewinds(
  job_id TEXT NOT NULL REFERENCES train_jobs(id), first_round INTEGER NOT NULL,
  end_round INTEGER NOT NULL, reason TEXT NOT NULL, created_at REAL NOT NULL);
-- A late catch: a round of a training job that had ended (done, or released while its data was
-- kept for audits) was found poisoned, and the node trains it again from that round
-- (kinds/train/late_catches): the round's graph job, why, and when the retraining ended (NULL
-- while it runs; `error` when it could not). The job keeps its stored state (done or retained)
-- meanwhile. Created by the schema above on any database.
CREATE TABLE IF NOT EXISTS train_late_catches(
  job_id TEXT NOT NULL REFERENCES train_jobs(id), graph_job TEXT NOT NULL, reason TEXT NOT NULL,
  started_at REAL NOT NULL, ended_at REAL, error TEXT);
-- The dashboard lists a round's graph job under its training job.
CREATE INDEX IF NOT EXISTS train_rounds_by_graph_job ON train_rounds(graph_job);
-- A streamed training job's batches the node holds but has not trained: x then y as
-- stored tensors; a row with empty tensors marks where the data ended.
CREATE TABLE IF NOT EXISTS train_batches(
  job_id TEXT NOT NULL REFERENCES train_jobs(id), batch INTEGER NOT NULL, tensors TEXT NOT NULL,
  PRIMARY KEY(job_id, batch));
-- Access requests (app/labnode/access/): one-time sign-in codes (hashed, single use,
-- expiring; rows also count issues per e-mail and per address for the rate limit), browser
-- sessions (the cookie's hash; email NULL until signed in) and researchers' requests as the form
-- took them. A request's credential is created when its researcher first asks to see it.
CREATE TABLE IF NOT EXISTS access_codes(
  id INTEGER PRIMARY KEY, email TEXT NOT NULL, address TEXT NOT NULL, code_hash TEXT NOT NULL,
  issued_at REAL NOT NULL, expires_at REAL NOT NULL, failures INTEGER NOT NULL DEFAULT 0,
  used_at REAL);
CREATE INDEX IF NOT EXISTS access_codes_by_email ON access_codes(email, issued_at);
CREATE INDEX IF NOT EXISTS access_codes_by_address ON access_codes(address, issued_at);
CREATE TABLE IF NOT EXISTS access_sessions(
  token_hash TEXT PRIMARY KEY, email TEXT, pending_email TEXT, created_at REAL NOT NULL,
  expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS access_requests(
  id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT NOT NULL, institution TEXT NOT NULL,
  purpose TEXT NOT NULL, computations TEXT NOT NULL, needs TEXT NOT NULL, scale TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending', created_at REAL NOT NULL, decided_at REAL,
  staff_note TEXT, credential_shown_at REAL);
CREATE INDEX IF NOT EXISTS access_requests_by_email ON access_requests(email, id);
-- Staff requests (`jobs cancel|purge`) the running node carries out at its next check (outcome:
-- "ok" or why it refused).
CREATE TABLE IF NOT EXISTS job_requests(
  id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, action TEXT NOT NULL, requested_at REAL NOT NULL,
  done_at REAL, outcome TEXT);
-- The row /healthz rewrites to prove the database still commits.
CREATE TABLE IF NOT EXISTS health_probe(id INTEGER PRIMARY KEY, probes INTEGER NOT NULL);
-- What the serving node tells the staff commands about itself (store/node_settings.hpp).
CREATE TABLE IF NOT EXISTS node_settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- The task engine's durable graph (store/task_store.hpp), per job kind: each task's job, type,
-- last attempt and whether it is decided, and the tasks it waits on, so a restarted node reloads a
-- running job's graph and resumes without computing a decided task again.
CREATE TABLE IF NOT EXISTS engine_tasks(
  kind TEXT NOT NULL, id INTEGER NOT NULL, job_id TEXT NOT NULL, type TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0, decided INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(kind, id));
CREATE INDEX IF NOT EXISTS engine_tasks_by_job ON engine_tasks(kind, job_id);
CREATE TABLE IF NOT EXISTS task_dependencies(
  kind TEXT NOT NULL, task_id INTEGER NOT NULL, depends_on INTEGER NOT NULL,
  PRIMARY KEY(kind, task_id, depends_on));
)sql";

// Version 2 → 3: matmul leases move to task_leases; graph attempts already used (known from their
// verdicts) are kept there too.
constexpr const char* kMigrateTo3 = R"sql(
INSERT OR IGNORE INTO task_leases(kind, task_id, attempt, volunteer_id, leased_at, deadline)
  SELECT 'matmul', task_id, attempt, volunteer_id, leased_at, deadline FROM leases;
INSERT OR IGNORE INTO task_leases(kind, task_id, attempt, volunteer_id, leased_at, deadline)
  SELECT 'graph', task_id, attempt, volunteer_id, created_at, created_at FROM graph_results;
DELETE FROM leases;
UPDATE schema_version SET version = 3;
)sql";

// Version 3 → 4: a tile's verdict records the threshold its check accepted up to.
constexpr const char* kMigrateTo4 = R"sql(
ALTER TABLE results ADD COLUMN threshold REAL;
UPDATE schema_version SET version = 4;
)sql";

// Version 4 → 5: the graph jobs a training job ran as its rounds name it as their owner (from its
// committed rounds and the round it had in flight). The columns are added where the table lacks
// them (a version 1 database gains the graph tables, owner columns included, from the schema
// above).
constexpr const char* kAddOwnerColumns = R"sql(
ALTER TABLE graph_jobs ADD COLUMN owner_job TEXT;
ALTER TABLE graph_jobs ADD COLUMN owner_round INTEGER;
)sql";
constexpr const char* kMigrateTo5 = R"sql(
UPDATE graph_jobs SET (owner_job, owner_round) =
  (SELECT r.job_id, r.round FROM train_rounds r WHERE r.graph_job = graph_jobs.id)
  WHERE id IN (SELECT graph_job FROM train_rounds);
UPDATE graph_jobs SET (owner_job, owner_round) =
  (SELECT t.id, t.rounds_done + coalesce(json_extract(t.request, '$.train.first_round'), 0)
   FROM train_jobs t WHERE t.round_job = graph_jobs.id)
  WHERE owner_job IS NULL AND id IN (SELECT round_job FROM train_jobs);
UPDATE schema_version SET version = 5;
)sql";

// Indexes on columns a migration adds: created once the columns exist.
constexpr const char* kLateIndexes = R"sql(
CREATE INDEX IF NOT EXISTS graph_jobs_by_owner ON graph_jobs(owner_job);
)sql";

bool hasColumn(Database& db, const char* table, const char* column) {
    auto query = db.prepare("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?");
    query.bind(1, std::string_view(table)).bind(2, std::string_view(column));
    return query.step().value_or(false) && query.columnInt(0) > 0;
}

} // namespace

Expected<void> migrateSchema(Database& db) {
    if (auto ok = db.execute(kSchema); !ok)
        return ok;
    std::optional<std::int64_t> version;
    {
        auto query = db.prepare("SELECT version FROM schema_version");
        auto row = query.step();
        if (!row)
            return tl::unexpected(row.error());
        if (*row)
            version = query.columnInt(0);
    }
    if (!version) {
        auto insert = db.prepare("INSERT INTO schema_version(version) VALUES(?)");
        if (auto ok = insert.bind(1, std::int64_t{kSchemaVersion}).run(); !ok)
            return ok;
    } else if (*version >= 1 && *version < kSchemaVersion) {
        // Version 1 lacked the graph tables and version 2 the task_leases table, created above;
        // version 3 the results' threshold column; version 4 the graph jobs' owner columns.
        std::string steps = "BEGIN;";
        if (*version < 3)
            steps += kMigrateTo3;
        if (*version < 4)
            steps += kMigrateTo4;
        if (!hasColumn(db, "graph_jobs", "owner_job"))
            steps += kAddOwnerColumns;
        steps += kMigrateTo5;
        if (auto ok = db.execute(steps + "COMMIT;"); !ok)
            return ok;
    } else if (*version != kSchemaVersion) {
        return makeError(ErrorCode::Internal, "database schema version " +
                                                  std::to_string(*version) +
                                                  " is not the version this node knows (" +
                                                  std::to_string(kSchemaVersion) + ")");
    }
    return db.execute(kLateIndexes);
}

} // namespace goblin::labnode
