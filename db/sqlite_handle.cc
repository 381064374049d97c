#include "db/sqlite_handle.h"

#include <sqlite3.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.h"

namespace calisim::db {
namespace {

// What a user should read for the result codes that describe the file rather than our SQL.
const char* user_hint(int primary) {
  switch (primary) {
    case SQLITE_NOTADB: return "is not an SQLite database";
    case SQLITE_CORRUPT: return "is corrupt (restore it from an export, or re-import the data)";
    case SQLITE_READONLY: return "is read-only (check the file's permissions, or open it for reading only)";
    case SQLITE_CANTOPEN: return "cannot be opened";
    case SQLITE_PERM: return "cannot be accessed (permission denied)";
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "is locked by another process for too long";
    case SQLITE_FULL: return "cannot grow: the disk is full";
    case SQLITE_IOERR: return "could not be read or written (I/O error)";
    default: return nullptr;
  }
}

}  // namespace

void check_database_path(const std::string& path, OpenMode mode) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(path, "", fs::exists(dir, ec) ? "'" + dir.string() + "' is a file, not a directory"
                                                   : "directory '" + dir.string() + "' does not exist");
  }
  if (mode != OpenMode::create && !fs::exists(p, ec)) {
    throw InputError(path, "", "database file does not exist (create one with `calisim db init`)");
  }
  if (fs::is_directory(p, ec)) throw InputError(path, "", "is a directory, not a database file");
}

Connection::Connection(const std::string& path, OpenMode mode, int busy_timeout_ms) : path_(path), mode_(mode) {
  check_database_path(path, mode);

  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case OpenMode::read_only: flags |= SQLITE_OPEN_READONLY; break;
    case OpenMode::read_write: flags |= SQLITE_OPEN_READWRITE; break;
    case OpenMode::create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
  }
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    const char* hint = user_hint(rc & 0xff);
    throw InputError(path, "", std::string(hint ? hint : "cannot be opened") + " (sqlite: " + msg + ")");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Connection::~Connection() {
  if (db_) sqlite3_close_v2(db_);
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)), mode_(other.mode_) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    mode_ = other.mode_;
  }
  return *this;
}

void Connection::fail(int rc, std::string_view what) const {
  const std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  if (const char* hint = user_hint(rc & 0xff)) {
    throw InputError(path_, "", std::string(hint) + " while " + std::string(what) + " (sqlite: " + detail + ")");
  }
  throw std::runtime_error("sqlite error while " + std::string(what) + " on '" + path_ + "': " + detail);
}

void Connection::exec(std::string_view sql) {
  const std::string s(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) fail(rc, "running '" + s.substr(0, 60) + "'");
}

std::int64_t Connection::query_int(std::string_view sql) {
  Statement st(*this, sql);
  return st.step() ? st.int64(0) : 0;
}

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Connection& conn, std::string_view sql) : conn_(&conn) {
  const int rc = sqlite3_prepare_v2(conn.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) conn.fail(rc, "preparing '" + std::string(sql.substr(0, 60)) + "'");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::int64_t v) {
  const int rc = sqlite3_bind_int64(stmt_, index, v);
  if (rc != SQLITE_OK) conn_->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, double v) {
  const int rc = sqlite3_bind_double(stmt_, index, v);
  if (rc != SQLITE_OK) conn_->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view v) {
  const int rc = sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) conn_->fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) conn_->fail(rc, "binding a parameter");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  conn_->fail(rc, "executing '" + std::string(sqlite3_sql(stmt_)).substr(0, 60) + "'");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() { sqlite3_reset(stmt_); }

std::int64_t Statement::int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
}
bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

Transaction::Transaction(Connection& conn) : conn_(&conn), nested_(sqlite3_get_autocommit(conn.handle()) == 0) {
  conn.exec(nested_ ? "SAVEPOINT calisim_nested" : "BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (done_) return;
  const char* undo = nested_ ? "ROLLBACK TO calisim_nested; RELEASE calisim_nested" : "ROLLBACK";
  sqlite3_exec(conn_->handle(), undo, nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  conn_->exec(nested_ ? "RELEASE calisim_nested" : "COMMIT");
  done_ = true;
}

}  // namespace calisim::db
