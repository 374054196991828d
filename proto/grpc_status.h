// What both ends of the control channel share beyond the schema: the metadata key that carries
// the job token, and the one mapping between absl::Status and grpc::Status (their canonical codes
// have the same numbers).
#pragma once

#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace dlaunch {

inline constexpr char kTokenMetadataKey[] = "x-dlaunch-token";

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace dlaunch
