#include "staff/data_folder.hpp"

#include <fstream>
#include <optional>

namespace goblin::labnode {
namespace {

std::optional<std::string> ownerOf(const std::filesystem::path& folder) {
    std::ifstream in(folder / kDataFolderOwnerFile);
    if (!in)
        return std::nullopt;
    std::string name;
    std::getline(in, name);
    return name;
}

} // namespace

DataFolderChoice defaultDataFolder(const std::filesystem::path& database) {
    const std::filesystem::path absolute = std::filesystem::absolute(database);
    const std::string name = absolute.filename().string();
    const std::filesystem::path own = absolute.parent_path() / (name + ".goblin-data");
    std::error_code ec;
    if (std::filesystem::is_directory(own, ec))
        return {own, "the database's own"};
    const std::filesystem::path legacy = absolute.parent_path() / kLegacyDataFolderName;
    if (std::filesystem::is_directory(legacy, ec)) {
        const auto owner = ownerOf(legacy);
        if (owner && *owner == name)
            return {legacy, "kept: goblin-data beside the database belongs to it"};
        if (!owner)
            return {legacy, "kept: goblin-data beside the database, made by an earlier version, "
                            "now belongs to " +
                                name};
    }
    return {own, "new: the database's own"};
}

Expected<void> claimDataFolder(const std::filesystem::path& folder,
                               const std::filesystem::path& database) {
    const std::string name = std::filesystem::absolute(database).filename().string();
    if (ownerOf(folder))
        return {};
    std::ofstream out(folder / kDataFolderOwnerFile);
    out << name << '\n';
    out.close();
    if (!out) {
        std::string message = "cannot write ";
        return makeError(ErrorCode::Internal,
                         message.append((folder / kDataFolderOwnerFile).string()));
    }
    return {};
}

} // namespace goblin::labnode
