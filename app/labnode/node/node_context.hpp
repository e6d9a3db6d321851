// What every role of the lab node is built with: the core thread's io_context, the worker pool,
// the durable store, the blob store, the clock, the log and the random source (a CSPRNG, safe on
// any thread). Plain references; the composition root (main.cpp, or a test) owns the objects.
// Roles that take it live on the core thread.
#pragma once

#include <functional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "goblin/core/random_source.hpp"
#include "node/log_level.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode {

using Clock = std::function<double()>;                   // seconds since the epoch
using LogSink = std::function<void(const std::string&)>; // plain lines (the access pages' log)

struct NodeContext {
    boost::asio::io_context& core;
    boost::asio::thread_pool& workers;
    NodeStore& store;
    BlobStore& blobs;
    Clock clock;
    NodeLog log;                // log(line) is info; log.warn(line), log.error(line)
    core::RandomSource& random; // Freivalds vectors, audit choices, identities
};

} // namespace goblin::labnode
