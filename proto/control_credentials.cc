#include "proto/control_credentials.h"

#include <grpc/support/log.h>

#include "absl/synchronization/mutex.h"

#include <atomic>
#include <cstdio>
#include <cstring>

namespace dlaunch {
namespace {

std::atomic<int64_t> g_failed_handshakes{0};

void LogGrpcMessage(gpr_log_func_args* args) {
  // One "Handshake failed" line per connection; the handshaker may add its own lines.
  if (std::strstr(args->message, "Handshake failed") != nullptr) {
    g_failed_handshakes.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (std::strstr(args->file, "ssl_transport_security") != nullptr ||
      std::strstr(args->file, "security_handshaker") != nullptr) {
    return;
  }
  const char* slash = std::strrchr(args->file, '/');
  std::fprintf(stderr, "[dlaunch] grpc: %s:%d: %s\n", slash ? slash + 1 : args->file, args->line,
               args->message);
}

}  // namespace

std::shared_ptr<grpc::Channel> ControlChannel(const std::string& target, const JobCredentials& creds,
                                              grpc::ChannelArguments args) {
  if (creds.fingerprint.empty()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  args.SetSslTargetNameOverride(kControlTlsName);
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = creds.cert_pem;
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(options), args);
}

std::shared_ptr<grpc::ServerCredentials> ControlServerCredentials(const ControlIdentity* identity) {
  if (identity == nullptr) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({identity->key_pem, identity->cert_pem});
  return grpc::SslServerCredentials(options);
}

void CountFailedHandshakesQuietly() { gpr_set_log_function(&LogGrpcMessage); }

void TurnOffLockOrderChecks() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

int64_t FailedHandshakes() { return g_failed_handshakes.load(std::memory_order_relaxed); }

}  // namespace dlaunch
