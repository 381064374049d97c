// One trace record (db/trace_store.h: a kernel, memory copy or memset of a trace run) as a JSON
// object, for the JSON export (db/text_dump.h), one record per line:
//   {"name", "class", "device", "stream", "grid": [x, y, z], "block": [x, y, z], "start_ns",
//    "end_ns", "nvtx_range", "bytes", "copy_kind"}
// nvtx_range, bytes and copy_kind are written only when set (non-empty / non-zero) and read as
// ""/0 when absent; every other field is required.
//
// trace_kernel_from_json() throws InputError(file, where + FIELD, ...) naming the field that is
// wrong (`where` is the record's JSON path ending in "."): a class is_trace_class() rejects,
// negative or non-integer numbers, grid / block not three non-negative 32-bit integers, end_ns
// before start_ns.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "db/trace_store.h"

namespace calisim::db {

nlohmann::ordered_json trace_kernel_to_json(const TraceKernel& k);
TraceKernel trace_kernel_from_json(const nlohmann::json& j, const std::string& file, const std::string& where);

}  // namespace calisim::db
