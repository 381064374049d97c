#include "core/json_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace calisim {
namespace {

// Tracks where the parser is, so that a key given twice in one object is refused with its path
// (nlohmann::json keeps the last value silently; a config that says tp_size twice is a mistake).
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(std::string file) : file_(std::move(file)) {}

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start: frames_.push_back(Frame{true, child_name(), {}, {}, 0}); break;
      case E::array_start: frames_.push_back(Frame{false, child_name(), {}, {}, 0}); break;
      case E::key: {
        Frame& f = frames_.back();
        f.last_key = parsed.get<std::string>();
        if (!f.keys.insert(f.last_key).second) {
          throw InputError(file_, path_of(f.last_key), "the key is given twice in one object (JSON keeps only one)");
        }
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        element_done();
        break;
      case E::value: element_done(); break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object;
    std::string name;  // this container's path
    std::set<std::string> keys;
    std::string last_key;
    std::size_t elements;  // arrays: elements finished
  };
  std::string child_name() const {
    if (frames_.empty()) return "";
    const Frame& f = frames_.back();
    return f.object ? path_of(f.last_key) : fmt::format("{}[{}]", f.name, f.elements);
  }
  std::string path_of(const std::string& key) const {
    const std::string& parent = frames_.back().name;
    return parent.empty() ? key : parent + "." + key;
  }
  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().elements;
  }
  std::string file_;
  std::vector<Frame> frames_;
};

}  // namespace

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (does it exist and is it readable?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_json_file(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return nlohmann::json::parse(text, DuplicateKeyCheck(path));
  } catch (const nlohmann::json::parse_error& e) {
    // Translate the byte offset into line:column for humans.
    std::size_t line = 1, col = 1;
    // e.byte is 1-based (the offending character is text[e.byte - 1]); count what precedes it.
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    throw InputError(path, fmt::format("line {}, column {}", line, col), "invalid JSON: " + what);
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a value JSON cannot hold here (a number beyond double's range).
    throw InputError(path, "", "unreadable JSON value: " + std::string(e.what()));
  }
}

}  // namespace calisim
