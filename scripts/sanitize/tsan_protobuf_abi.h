// Force-included first into every translation unit of the ThreadSanitizer build
// (scripts/sanitize.sh tsan). Debian's libprotobuf is built without TSan, but protobuf's
// map_field.h gives MapFieldBase two extra members (seq1_, seq2_, a check against unsynchronised
// map access) when __SANITIZE_THREAD__ is defined. Code compiled with -fsanitize=thread then
// disagrees with libprotobuf.so about where a map field's members lie, and reading a
// google.protobuf.Struct (the journal's JSON) crashed in Map::find. Including map_field.h here
// with the macro hidden fixes its layout to the library's for the whole translation unit (its
// include guard keeps later includes from re-reading it). libstdc++, abseil and gRPC are
// configured first, so they keep their TSan annotations (which change no layout).
#pragma once

#include <cstddef>  // libstdc++'s c++config.h: _GLIBCXX_TSAN stays on
#include <absl/base/config.h>
#include <grpc/impl/codegen/port_platform.h>

#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")
