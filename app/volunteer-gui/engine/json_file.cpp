#include "json_file.hpp"

#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <sys/stat.h>

namespace goblin::volunteer {

namespace json = boost::json;
namespace fs = std::filesystem;

json::object readJsonObject(const fs::path& path) {
    std::ifstream in(path);
    if (!in)
        return {};
    std::stringstream text;
    text << in.rdbuf();
    boost::system::error_code ec;
    json::value value = json::parse(text.str(), ec);
    if (ec || !value.is_object())
        return {};
    return value.get_object();
}

Expected<void> writeJsonObject(const fs::path& path, const json::object& content) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const fs::path temporary = path.string() + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        if (!out)
            return makeError(ErrorCode::Internal, "cannot write " + temporary.string());
        out << json::serialize(content) << '\n';
    }
    ::chmod(temporary.c_str(), 0600);
    fs::rename(temporary, path, ec);
    if (ec)
        return makeError(ErrorCode::Internal, "cannot save " + path.string() + ": " + ec.message());
    return {};
}

} // namespace goblin::volunteer
