#include "kinds/graph/graph_blobs.hpp"

#include <cstring>

#include <boost/json.hpp>

namespace goblin::labnode {

namespace json = boost::json;

Expected<json::array> storeTensors(const BlobStore& blobs,
                                   const std::vector<core::Tensor>& tensors) {
    json::array stored;
    for (const core::Tensor& tensor : tensors) {
        json::array shape;
        for (auto dim : tensor.shape())
            shape.push_back(dim);
        std::string digest; // empty tensors have no bytes to store
        if (tensor.byteSize() > 0) {
            auto put = blobs.put(tensor);
            if (!put)
                return tl::unexpected(put.error());
            digest = std::move(*put);
        }
        stored.push_back(json::object{{"digest", digest},
                                      {"dtype", std::string(core::wireName(tensor.dtype()))},
                                      {"shape", std::move(shape)}});
    }
    return stored;
}

Expected<std::vector<core::Tensor>> loadTensors(const BlobStore& blobs, const json::array& stored) {
    std::vector<core::Tensor> tensors;
    for (const json::value& entry : stored) {
        const json::object* fields = entry.if_object();
        const json::value* digest = fields ? fields->if_contains("digest") : nullptr;
        const json::value* dtypeName = fields ? fields->if_contains("dtype") : nullptr;
        const json::value* shapeList = fields ? fields->if_contains("shape") : nullptr;
        if (!digest || !digest->is_string() || !dtypeName || !dtypeName->is_string() ||
            !shapeList || !shapeList->is_array())
            return makeError(ErrorCode::Internal, "a stored tensor record is malformed");
        auto dtype = core::dtypeFromWireName(dtypeName->get_string());
        if (!dtype)
            return makeError(ErrorCode::Internal, "a stored tensor has an unknown dtype");
        core::Shape shape;
        for (const json::value& dim : shapeList->get_array()) {
            if (!dim.is_int64())
                return makeError(ErrorCode::Internal, "a stored tensor shape is malformed");
            shape.push_back(dim.get_int64());
        }
        auto tensor = core::Tensor::allocate(*dtype, shape);
        if (!tensor)
            return tl::unexpected(tensor.error());
        if (tensor->byteSize() > 0) {
            auto mapped = blobs.map(std::string(digest->get_string()));
            if (!mapped)
                return tl::unexpected(mapped.error());
            if ((*mapped)->bytes().size() != tensor->byteSize())
                return makeError(ErrorCode::Internal, "a stored tensor blob has the wrong size");
            std::memcpy(tensor->bytes().data(), (*mapped)->bytes().data(), tensor->byteSize());
        }
        tensors.push_back(std::move(*tensor));
    }
    return tensors;
}

Expected<std::vector<core::Tensor>> loadTensors(const BlobStore& blobs, const std::string& stored) {
    json::error_code ec;
    const json::value value = json::parse(stored, ec);
    if (ec || !value.is_array())
        return makeError(ErrorCode::Internal, "a stored tensor list is malformed");
    return loadTensors(blobs, value.get_array());
}

std::vector<std::string> storedDigests(const json::array& stored) {
    std::vector<std::string> digests;
    for (const json::value& entry : stored)
        if (const auto* fields = entry.if_object())
            if (const auto* digest = fields->if_contains("digest");
                digest && digest->is_string() && !digest->get_string().empty())
                digests.emplace_back(digest->get_string());
    return digests;
}

std::vector<std::string> storedDigests(const std::string& stored) {
    json::error_code ec;
    json::value value = json::parse(stored, ec);
    if (ec || !value.is_array())
        return {};
    return storedDigests(value.get_array());
}

void deleteUnusedBlobs(NodeStore& store, const BlobStore& blobs, const std::string& stored,
                       const std::string& exceptJob) {
    for (const std::string& digest : storedDigests(stored))
        if (!store.blobInUse(digest, exceptJob))
            blobs.remove(digest);
}

} // namespace goblin::labnode
