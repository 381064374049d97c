// Thin RAII layer over the SQLite C API: one connection, prepared statements, transactions.
//
// Contract: every failure throws. Problems the user can fix (a missing directory, a file that is
// not a database, a corrupt or read-only file, a database locked too long by another process)
// throw calisim::InputError naming the file; anything else (a bad SQL string: a bug here) throws
// std::runtime_error. Nothing in this file knows the calisim schema.
//
// A Connection is used by one thread at a time (SQLite's "multi-thread" mode). Statements and
// Transactions must not outlive the Connection they were made from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace calisim::db {

enum class OpenMode {
  read_only,   // the file must exist; no write is ever attempted
  read_write,  // the file must exist
  create,      // the file is created when missing (its directory must exist)
};

// The checks Connection makes before opening: the directory exists (and is one, not a file), the
// file exists unless `mode` creates it, and is not a directory. InputError naming `path`. Commands
// that write a database at the end of long work call it first, to fail before the work.
void check_database_path(const std::string& path, OpenMode mode);

class Connection {
 public:
  // Opens `path`; waits up to busy_timeout_ms for locks held by other processes.
  Connection(const std::string& path, OpenMode mode, int busy_timeout_ms = 10000);
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  // Runs a statement returning one integer (a PRAGMA, a COUNT(*)); 0 when it returns no row.
  std::int64_t query_int(std::string_view sql);
  std::int64_t last_insert_rowid() const;

  const std::string& path() const { return path_; }
  OpenMode mode() const { return mode_; }
  sqlite3* handle() const { return db_; }

  // Throws the error for result code `rc`, with `what` saying what was being done.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  OpenMode mode_ = OpenMode::read_only;
};

class Statement {
 public:
  Statement(Connection& conn, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based as in SQLite.
  Statement& bind(int index, std::int64_t v);
  Statement& bind(int index, int v) { return bind(index, static_cast<std::int64_t>(v)); }
  Statement& bind(int index, double v);
  Statement& bind(int index, std::string_view v);  // copied (SQLITE_TRANSIENT)
  Statement& bind_null(int index);

  // Advances; true while a row is available.
  bool step();
  // Runs a statement that returns no rows, then resets it for reuse.
  void run();
  // Clears the result state (bindings stay).
  void reset();

  // Columns are 0-based as in SQLite.
  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;

 private:
  Connection* conn_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Binds consecutive parameters from `first`: Binder(st, 1)(a)(b)(c).
class Binder {
 public:
  Binder(Statement& st, int first) : st_(&st), next_(first) {}
  template <class T>
  Binder& operator()(const T& v) {
    st_->bind(next_++, v);
    return *this;
  }

 private:
  Statement* st_;
  int next_;
};

// BEGIN IMMEDIATE on construction (takes the write lock up front, so two writers never
// deadlock on lock upgrade); ROLLBACK on destruction unless commit() ran. Inside another
// Transaction it becomes a SAVEPOINT, so operations that commit on their own compose into one
// atomic outer transaction.
class Transaction {
 public:
  explicit Transaction(Connection& conn);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection* conn_;
  bool nested_ = false;
  bool done_ = false;
};

}  // namespace calisim::db
