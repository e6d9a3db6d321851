// Graph-job tensors in the blob store: inputs at submission and each task's accepted outputs, so
// a restarted node resumes graph jobs. Stored as a JSON list of {"digest", "dtype", "shape"} in the
// database. Any thread (the blob store is thread-safe).
#pragma once

#include <string>
#include <vector>

#include <boost/json/array.hpp>

#include "goblin/net/message.hpp"
#include "store/blob_store.hpp"
#include "store/node_store.hpp"

namespace goblin::labnode {

Expected<boost::json::array> storeTensors(const BlobStore& blobs,
                                          const std::vector<core::Tensor>& tensors);
Expected<std::vector<core::Tensor>> loadTensors(const BlobStore& blobs,
                                                const boost::json::array& stored);
// The same from the list's JSON text as the database holds it.
Expected<std::vector<core::Tensor>> loadTensors(const BlobStore& blobs, const std::string& stored);
std::vector<std::string> storedDigests(const boost::json::array& stored);
// The same from the list's JSON text as the database holds it; empty when it is malformed.
std::vector<std::string> storedDigests(const std::string& stored);
// Deletes the stored tensors' blobs that no job but `exceptJob` (none when empty) still holds.
void deleteUnusedBlobs(NodeStore& store, const BlobStore& blobs, const std::string& stored,
                       const std::string& exceptJob = {});

} // namespace goblin::labnode
