// A boost::json::basic_parser handler that builds the same value as boost::json::parse, except
// that doubles are re-read from their text with std::from_chars (correctly rounded).
#include "goblin/core/precise_json.hpp"

#include <boost/json/basic_parser_impl.hpp>

#include <charconv>
#include <string>

namespace goblin::core {
namespace {

namespace json = boost::json;
using boost::system::error_code;

struct PreciseHandler {
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    json::value_stack st;
    std::string number; // the text of a number split across parts

    bool on_document_begin(error_code&) { return true; }
    bool on_document_end(error_code&) { return true; }
    bool on_object_begin(error_code&) { return true; }
    bool on_object_end(std::size_t n, error_code&) {
        st.push_object(n);
        return true;
    }
    bool on_array_begin(error_code&) { return true; }
    bool on_array_end(std::size_t n, error_code&) {
        st.push_array(n);
        return true;
    }
    bool on_key_part(json::string_view s, std::size_t, error_code&) {
        st.push_chars(s);
        return true;
    }
    bool on_key(json::string_view s, std::size_t, error_code&) {
        st.push_key(s);
        return true;
    }
    bool on_string_part(json::string_view s, std::size_t, error_code&) {
        st.push_chars(s);
        return true;
    }
    bool on_string(json::string_view s, std::size_t, error_code&) {
        st.push_string(s);
        return true;
    }
    bool on_number_part(json::string_view s, error_code&) {
        number.append(s.data(), s.size());
        return true;
    }
    bool on_int64(std::int64_t i, json::string_view, error_code&) {
        number.clear();
        st.push_int64(i);
        return true;
    }
    bool on_uint64(std::uint64_t u, json::string_view, error_code&) {
        number.clear();
        st.push_uint64(u);
        return true;
    }
    bool on_double(double d, json::string_view s, error_code&) {
        number.append(s.data(), s.size());
        double exact = d;
        const auto [end, status] =
            std::from_chars(number.data(), number.data() + number.size(), exact);
        // Out of range (1e400) or anything from_chars refuses keeps Boost's own reading.
        st.push_double(status == std::errc{} && end == number.data() + number.size() ? exact : d);
        number.clear();
        return true;
    }
    bool on_bool(bool b, error_code&) {
        st.push_bool(b);
        return true;
    }
    bool on_null(error_code&) {
        st.push_null();
        return true;
    }
    bool on_comment_part(json::string_view, error_code&) { return true; }
    bool on_comment(json::string_view, error_code&) { return true; }
};

} // namespace

boost::json::value parsePrecise(std::string_view text, boost::system::error_code& ec,
                                const boost::json::parse_options& options) {
    json::basic_parser<PreciseHandler> parser(options);
    parser.handler().st.reset();
    const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
    if (ec)
        return nullptr;
    if (used != text.size()) {
        ec = json::error::extra_data;
        return nullptr;
    }
    return parser.handler().st.release();
}

} // namespace goblin::core
