// decodeGraph / encodeGraph: the JSON wire form of a graph (docs/ops.md, "Wire form").
#include <boost/json.hpp>

#include "goblin/core/graph/graph_json.hpp"
#include "goblin/core/precise_json.hpp"
#include "json_reading.hpp"

namespace goblin::core::graph {
namespace {

namespace json = boost::json;
using detail::asArray;
using detail::asInt;
using detail::field;
using detail::malformed;

constexpr std::size_t kMaxAttrs = 16;
constexpr std::size_t kMaxAttrList = 16;
constexpr std::size_t kMaxAttrString = 64;

Expected<ops::AttrValue> decodeAttr(const json::value& value) {
    if (value.is_bool())
        return ops::AttrValue{value.get_bool()};
    if (value.is_int64() || value.is_uint64()) {
        auto number = asInt(value, "an attribute");
        return number ? Expected<ops::AttrValue>(ops::AttrValue{*number})
                      : tl::unexpected(number.error());
    }
    if (value.is_double())
        return ops::AttrValue{value.get_double()};
    if (value.is_string() && value.get_string().size() <= kMaxAttrString)
        return ops::AttrValue{std::string(value.get_string())};
    if (value.is_array()) {
        auto list = detail::asIntList(value, "a list attribute", kMaxAttrList);
        return list ? Expected<ops::AttrValue>(ops::AttrValue{*list})
                    : tl::unexpected(list.error());
    }
    return malformed("an attribute must be a bool, number, short string or list of integers");
}

Expected<GraphNode> decodeNode(const json::value& value, const GraphLimits& limits) {
    const json::object* object = value.if_object();
    if (object == nullptr)
        return malformed("a node must be an object");
    auto id = field(*object, "id");
    auto op = field(*object, "op");
    auto args = field(*object, "args");
    if (!id || !op || !args)
        return malformed("a node needs id, op and args");
    GraphNode node;
    auto number = asInt(**id, "node id");
    if (!number)
        return tl::unexpected(number.error());
    node.id = *number;
    const json::string* name = (*op)->if_string();
    auto code = name ? ops::opFromName(std::string_view(*name)) : std::nullopt;
    if (!code)
        return makeError(ErrorCode::InvalidInput,
                         "unknown op '" + (name ? std::string(*name) : std::string("?")) + "'");
    node.op = *code;
    auto argList = detail::asIntList(**args, "node args", limits.maxArgs);
    if (!argList)
        return tl::unexpected(argList.error());
    node.args = std::move(*argList);
    const json::value* attrs = object->if_contains("attrs");
    if (attrs == nullptr)
        return node;
    if (!attrs->is_object() || attrs->get_object().size() > kMaxAttrs)
        return malformed("node attrs must be an object of at most 16 entries");
    for (const auto& [key, attr] : attrs->get_object()) {
        auto decoded = decodeAttr(attr);
        if (!decoded)
            return tl::unexpected(decoded.error());
        node.attrs.emplace(std::string(key), std::move(*decoded));
    }
    return node;
}

Expected<GraphInput> decodeInput(const json::value& value) {
    const json::object* object = value.if_object();
    if (object == nullptr)
        return malformed("an input must be an object");
    auto id = field(*object, "id");
    auto dtypeField = field(*object, "dtype");
    auto shapeField = field(*object, "shape");
    if (!id || !dtypeField || !shapeField)
        return malformed("an input needs id, dtype and shape");
    auto number = asInt(**id, "input id");
    const json::string* name = (*dtypeField)->if_string();
    auto dtype = name ? dtypeFromWireName(std::string_view(*name)) : std::nullopt;
    auto shape = detail::asIntList(**shapeField, "input shape", kMaxRank);
    if (!number || !shape)
        return tl::unexpected(!number ? number.error() : shape.error());
    if (!dtype)
        return makeError(ErrorCode::UnsupportedDtype, "unknown input dtype");
    return GraphInput{*number, {*dtype, std::move(*shape)}};
}

// Decodes a JSON list of T with `decode`, appending to `out`.
template <class T, class Decode>
Expected<void> decodeList(const json::object& root, std::string_view key, std::size_t maxLength,
                          std::vector<T>& out, Decode decode) {
    const json::value* value = root.if_contains(key);
    if (value == nullptr)
        return {};
    auto array = asArray(*value, key, maxLength);
    if (!array)
        return tl::unexpected(array.error());
    for (const json::value& item : **array) {
        auto decoded = decode(item);
        if (!decoded)
            return tl::unexpected(decoded.error());
        out.push_back(std::move(*decoded));
    }
    return {};
}

Expected<GraphConstant> decodeConstant(const json::value& value, const GraphLimits& limits) {
    const json::object* object = value.if_object();
    if (object == nullptr)
        return malformed("a constant must be an object");
    auto id = field(*object, "id");
    if (!id)
        return tl::unexpected(id.error());
    auto number = asInt(**id, "constant id");
    if (!number)
        return tl::unexpected(number.error());
    auto tensor = detail::decodeTensorObject(*object, limits.maxConstantBytes);
    if (!tensor)
        return tl::unexpected(tensor.error());
    return GraphConstant{*number, std::move(*tensor)};
}

json::array idList(const std::vector<ValueId>& ids) {
    json::array out;
    for (ValueId id : ids)
        out.push_back(id);
    return out;
}

json::value encodeAttr(const ops::AttrValue& attr) {
    return std::visit(
        [](const auto& value) -> json::value {
            using T = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<T, ops::IntList>)
                return idList(value);
            else if constexpr (std::is_same_v<T, std::string>)
                return json::string(value);
            else
                return value;
        },
        attr);
}

} // namespace

Expected<Graph> decodeGraph(std::string_view text, const GraphLimits& limits) {
    if (text.size() > kMaxGraphJsonBytes)
        return makeError(ErrorCode::LimitExceeded, "graph JSON is over the size limit");
    boost::system::error_code ec;
    json::parse_options options;
    options.max_depth = 8;
    json::value root = core::parsePrecise(text, ec, options);
    if (ec || !root.is_object())
        return malformed("graph JSON is not an object");
    const json::object& object = root.get_object();
    for (const auto& entry : object)
        if (entry.key() != "catalog" && entry.key() != "inputs" && entry.key() != "constants" &&
            entry.key() != "nodes" && entry.key() != "outputs")
            return malformed("unknown graph key '" + std::string(entry.key()) + "'");
    Graph graph;
    auto catalog = field(object, "catalog");
    auto outputs = field(object, "outputs");
    if (!catalog || !outputs)
        return malformed("a graph needs catalog and outputs");
    auto version = asInt(**catalog, "catalog");
    auto outputIds = detail::asIntList(**outputs, "outputs", limits.maxNodes + limits.maxInputs);
    if (!version || !outputIds)
        return tl::unexpected(!version ? version.error() : outputIds.error());
    graph.catalogVersion = static_cast<int>(std::clamp<std::int64_t>(*version, -1, 1 << 20));
    graph.outputs = std::move(*outputIds);
    auto inputs = decodeList(object, "inputs", limits.maxInputs, graph.inputs, decodeInput);
    auto constants = decodeList(object, "constants", limits.maxInputs, graph.constants,
                                [&](const json::value& v) { return decodeConstant(v, limits); });
    if (!inputs || !constants)
        return tl::unexpected(!inputs ? inputs.error() : constants.error());
    auto nodes = decodeList(object, "nodes", limits.maxNodes, graph.nodes,
                            [&](const json::value& v) { return decodeNode(v, limits); });
    if (!nodes)
        return tl::unexpected(nodes.error());
    return graph;
}

std::string encodeGraph(const Graph& graph) {
    json::object root;
    root["catalog"] = graph.catalogVersion;
    json::array inputs;
    for (const GraphInput& input : graph.inputs)
        inputs.push_back(json::object{{"id", input.id},
                                      {"dtype", wireName(input.spec.dtype)},
                                      {"shape", idList(input.spec.shape)}});
    root["inputs"] = std::move(inputs);
    json::array constants;
    for (const GraphConstant& constant : graph.constants) {
        json::object encoded = detail::encodeTensorObject(constant.value);
        encoded["id"] = constant.id;
        constants.push_back(std::move(encoded));
    }
    root["constants"] = std::move(constants);
    json::array nodes;
    for (const GraphNode& node : graph.nodes) {
        json::object attrs;
        for (const auto& [name, attr] : node.attrs)
            attrs[name] = encodeAttr(attr);
        nodes.push_back(json::object{{"id", node.id},
                                     {"op", ops::opInfo(node.op).name},
                                     {"args", idList(node.args)},
                                     {"attrs", std::move(attrs)}});
    }
    root["nodes"] = std::move(nodes);
    root["outputs"] = idList(graph.outputs);
    return json::serialize(root);
}

} // namespace goblin::core::graph
