// The data notice the access pages show where a researcher asks for access and receives a
// credential. The same text as the Python client's goblin.DATA_WARNING (python/goblin/client.py);
// python/tests/test_access_requests.py fails when the two differ. Constant; any thread.
#pragma once

#include <string_view>

namespace goblin::labnode::access {

inline constexpr std::string_view kDataNotice =
    "Numbers are not encrypted while volunteers compute them: personal or medical data does not "
    "belong on the public network.";

} // namespace goblin::labnode::access
