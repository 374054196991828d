// What both ends of the control channel share beyond the schema: the metadata key that carries
// the job token and its check, and the one mapping between absl::Status and grpc::Status (their canonical codes
// have the same numbers).
#pragma once

#include <map>
#include <string>

#include <grpcpp/support/status.h>
#include <grpcpp/support/string_ref.h>

#include "absl/status/status.h"

namespace dlaunch {

inline constexpr char kTokenMetadataKey[] = "x-dlaunch-token";
// A relay's name on its Relay call (`dlaunch-relay --name`), for the launcher to say which went.
inline constexpr char kRelayNameMetadataKey[] = "x-dlaunch-relay";

// Whether a call's metadata carries `token`, compared in constant time (the launcher's and a
// relay's check on every call).
inline bool CarriesToken(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                         const std::string& token) {
  auto it = metadata.find(kTokenMetadataKey);
  if (it == metadata.end() || it->second.size() != token.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>(it->second.data()[i] ^ token[i]);
  }
  return diff == 0;
}

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace dlaunch
