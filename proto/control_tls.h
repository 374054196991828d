// The control channel's TLS (docs/security.md). For each job the launcher makes an ECDSA P-256
// key, held in its memory only, and a self-signed certificate for it, written to the job
// directory as control.crt. The certificate's SHA-256 fingerprint travels with the job token in
// the token file (never on a command line). Agents and `dlaunch watch` read both, check that the
// certificate is the one the fingerprint names, and trust that certificate alone: a process that
// does not hold the job's key cannot pose as the launcher, and nothing sent is readable on the
// wire, the token included. The gRPC credentials of both ends: proto/control_credentials.h.
// No gRPC here: the job directory writes these files.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace dlaunch {

// The name in the certificate; clients check it in place of the launcher's host name, which the
// launcher cannot know for every address agents may use to reach it.
inline constexpr char kControlTlsName[] = "dlaunch-control";
// The certificate's file, next to the token file.
inline constexpr char kControlCertFile[] = "control.crt";

struct ControlIdentity {
  std::string cert_pem;
  std::string key_pem;
  std::string fingerprint;  // "sha256:" + 64 lowercase hex digits
};

// A fresh key and a self-signed certificate valid from an hour ago for a year.
absl::StatusOr<ControlIdentity> MakeControlIdentity();

// A relay's key (docs/relays.md): ECDSA P-256, made and held in the relay's memory.
struct RelayKey {
  std::string public_key_pem;
  std::string private_key_pem;
};
absl::StatusOr<RelayKey> MakeRelayKey();

// A certificate for `public_key_pem`, named kControlTlsName, signed with the job's key: agents
// that trust only the job's certificate accept it. Not a CA. InvalidArgument for a key that is
// not PEM or not EC of at least 256 bits.
absl::StatusOr<std::string> IssueRelayCertificate(const ControlIdentity& job,
                                                  const std::string& public_key_pem);

// "sha256:<hex>" of the certificate's DER encoding.
absl::StatusOr<std::string> CertificateFingerprint(const std::string& cert_pem);

// What the token file holds: the token on its first line, then "tls sha256:<hex>" when the
// control channel is encrypted (no such line: plain TCP).
struct JobCredentials {
  std::string token;
  std::string fingerprint;  // "" = plain TCP
  std::string cert_pem;     // read from control.crt next to the token file when fingerprint is set
};

std::string FormatTokenFile(const std::string& token, const std::string& fingerprint);

// Reads the token file and, when it names a fingerprint, the certificate beside it, which must
// match. Errors name the file and what is wrong with it.
absl::StatusOr<JobCredentials> ReadJobCredentials(const std::string& token_file);
// The same, for the token file's `text` already read from `token_file`.
absl::StatusOr<JobCredentials> ParseJobCredentials(const std::string& text,
                                                   const std::string& token_file);

}  // namespace dlaunch
