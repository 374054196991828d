// The gRPC credentials of the control channel's two ends (docs/security.md), from the job's
// key and certificate (proto/control_tls.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "proto/control_tls.h"

namespace dlaunch {

// A channel to the control service at `target` with the caller's `args`: TLS pinned to
// `creds.cert_pem` (the name checked is kControlTlsName), or plain TCP when the job has no
// fingerprint.
std::shared_ptr<grpc::Channel> ControlChannel(const std::string& target, const JobCredentials& creds,
                                              grpc::ChannelArguments args = {});

// The launcher's side: TLS with the job's key and certificate (no client certificate asked:
// the token authenticates the caller), or plain TCP when `identity` is null.
std::shared_ptr<grpc::ServerCredentials> ControlServerCredentials(const ControlIdentity* identity);

// gRPC logs each failed TLS handshake as an error. On the launcher those are strangers'
// connections (a port scan, a plain-TCP client), which must not write into the job's terminal:
// from this call on they are counted (FailedHandshakes) instead; gRPC's other messages still go
// to stderr, as "[dlaunch] grpc: file:line: message".
void CountFailedHandshakesQuietly();
int64_t FailedHandshakes();

// Debian builds abseil and gRPC with their debug checks on. One of them, abseil's deadlock
// detection, keeps a process-wide graph of lock order that every absl::Mutex (gRPC's locks)
// looks itself up in on each acquisition: 2-4 % of the launcher's CPU at 10,000 agents. It
// only ever reports (it never changes what a lock does); from this call on it is off, as in a
// release build of abseil. Call at the start of main, before gRPC starts a thread.
void TurnOffLockOrderChecks();

}  // namespace dlaunch
