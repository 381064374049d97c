#include "db/schema.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "db/efficiency_db.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using SchemaTest = testing::ScratchDir;

TEST_F(SchemaTest, FreshFileGetsTheCurrentVersionAndWal) {
  auto db = EfficiencyDb::open(path("a.db"), OpenMode::create);
  EXPECT_EQ(schema_version(db.connection()), kSchemaVersion);
  Statement st(db.connection(), "PRAGMA journal_mode");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "wal");
}

TEST_F(SchemaTest, MigratesAnOlderFileForward) {
  {
    Connection conn(path("old.db"), OpenMode::create);
    migrate_to(conn, 1);
    conn.exec("INSERT INTO devices (name) VALUES ('Old GPU')");
    EXPECT_EQ(schema_version(conn), 1);
  }
  EXPECT_THROW(EfficiencyDb::open(path("old.db"), OpenMode::read_only), InputError);  // read-only cannot migrate
  auto db = EfficiencyDb::open(path("old.db"), OpenMode::read_write);
  EXPECT_EQ(schema_version(db.connection()), kSchemaVersion);
  ASSERT_TRUE(db.find_device("Old GPU"));
  db.add_alias("old", "Old GPU");  // a version-2 table
  EXPECT_EQ(db.device("old").name, "Old GPU");
}

TEST_F(SchemaTest, RefusesANewerSchemaWithoutTouchingIt) {
  {
    auto db = EfficiencyDb::open(path("new.db"), OpenMode::create);
    db.connection().exec("PRAGMA user_version = 99");
  }
  try {
    EfficiencyDb::open(path("new.db"), OpenMode::read_write);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
  Connection conn(path("new.db"), OpenMode::read_only);
  EXPECT_EQ(schema_version(conn), 99);
}

}  // namespace
}  // namespace calisim::db
