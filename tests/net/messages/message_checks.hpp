// Shared checks of the typed-message tests: a message as its receiver reads it (through frames and
// JSON text), its exact wire form, and the rule that every field, removed or mistyped, is refused.
// Test code; one thread.
#pragma once

#include <QtTest/QtTest>

#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "goblin/core/tensor.hpp"
#include "goblin/net/message.hpp"

namespace goblin::net::testing {

inline TensorPtr smallTensor(core::DType dtype, core::Shape shape) {
    auto tensor = core::Tensor::allocate(dtype, std::move(shape));
    if (!tensor)
        qFatal("cannot allocate a test tensor");
    auto bytes = tensor->bytes();
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<std::byte>(i * 7 + 1);
    return std::make_shared<const core::Tensor>(std::move(*tensor));
}

// What the receiver gets: the control object serialised and parsed again, the same tensors.
inline Message overTheWire(const Message& message) {
    const auto frames = encodeMessage(message);
    return Message{boost::json::parse(frames.at(0).text).as_object(), message.tensors};
}

// The control object as text, keys in the order written (the wire form, pinned by the tests).
inline std::string wireText(const Message& message) {
    return boost::json::serialize(overTheWire(message).control);
}
inline std::string wireText(std::string_view literal) {
    return boost::json::serialize(boost::json::parse(literal));
}

// One message from pieces (GCC 12's -Wrestrict misfires on chains of std::string + at -O3).
inline std::string joined(std::initializer_list<std::string_view> pieces) {
    std::string text;
    for (std::string_view piece : pieces)
        text.append(piece);
    return text;
}

inline boost::json::value mistyped(const boost::json::value& value) {
    if (value.is_object())
        return 7;
    return boost::json::object{};
}

// For every key of `valid` but "type": mistyped, the parse fails with an error naming the key;
// erased, it fails the same way unless the key is optional. A wrong "type" always fails.
template <class Parse>
void checkEveryField(const Message& valid, Parse parse, const std::set<std::string>& optional) {
    QVERIFY2(parse(valid).has_value(), "the valid message must parse");
    for (const auto& entry : valid.control) {
        const std::string key(entry.key());
        if (key == "type")
            continue;
        Message wrong = valid;
        wrong.control[key] = mistyped(entry.value());
        auto mistypedResult = parse(wrong);
        QVERIFY2(!mistypedResult, joined({"a mistyped '", key, "' must be refused"}).c_str());
        QVERIFY2(
            mistypedResult.error().message.find(key) != std::string::npos,
            joined({"the error names \'", key, "\': ", mistypedResult.error().message}).c_str());
        Message missing = valid;
        missing.control.erase(key);
        auto missingResult = parse(missing);
        if (optional.contains(key)) {
            QVERIFY2(missingResult.has_value(), joined({"'", key, "' is optional"}).c_str());
            continue;
        }
        QVERIFY2(!missingResult, joined({"a missing '", key, "' must be refused"}).c_str());
        QVERIFY2(
            missingResult.error().message.find(key) != std::string::npos,
            joined({"the error names \'", key, "\': ", missingResult.error().message}).c_str());
    }
    if (!valid.control.contains("type"))
        return; // a part of a message (capabilities), not a message
    Message retyped = valid;
    retyped.control["type"] = "something_else";
    QVERIFY2(!parse(retyped), "a message of another type must be refused");
}

// Adapts a parser of control objects to checkEveryField.
template <class Parse> auto onControl(Parse parse) {
    return [parse](const Message& message) { return parse(message.control); };
}

} // namespace goblin::net::testing
