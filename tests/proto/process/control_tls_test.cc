// The control channel's TLS with a real gRPC server on loopback: the pinned certificate is the
// only one a client accepts, and a plain client gets nothing from a TLS server.
#include "proto/control_credentials.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "dlaunch/control.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using std::chrono::seconds;

// Answers Preflight with a plan whose timeout says it was this server.
class PlanService final : public v1::Control::CallbackService {
 public:
  grpc::ServerUnaryReactor* Preflight(grpc::CallbackServerContext* ctx, const v1::PreflightRequest*,
                                      v1::PreflightPlan* plan) override {
    plan->set_timeout_ms(4242);
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

class TlsServer {
 public:
  explicit TlsServer(const ControlIdentity* identity) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ControlServerCredentials(identity), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~TlsServer() { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  PlanService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

grpc::Status CallPreflight(const std::string& address, const JobCredentials& creds) {
  auto stub = v1::Control::NewStub(ControlChannel(address, creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
  v1::PreflightPlan plan;
  grpc::Status s = stub->Preflight(&ctx, v1::PreflightRequest(), &plan);
  if (s.ok() && plan.timeout_ms() != 4242) return grpc::Status(grpc::StatusCode::INTERNAL, "other server");
  return s;
}

TEST(ControlTlsTest, EachJobGetsItsOwnKeyAndTheFingerprintNamesItsCertificate) {
  auto a = MakeControlIdentity();
  auto b = MakeControlIdentity();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->key_pem, b->key_pem);
  EXPECT_NE(a->fingerprint, b->fingerprint);
  ASSERT_EQ(a->fingerprint.size(), 7u + 64u) << a->fingerprint;
  EXPECT_EQ(a->fingerprint.substr(0, 7), "sha256:");
  auto again = CertificateFingerprint(a->cert_pem);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, a->fingerprint);
  EXPECT_FALSE(CertificateFingerprint("-----BEGIN CERTIFICATE-----\nnope\n").ok());
  EXPECT_FALSE(CertificateFingerprint("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n").ok());
  // The same figure as OpenSSL's own digest of the parsed certificate (`openssl x509
  // -fingerprint -sha256` prints it with colons).
  BIO* bio = BIO_new_mem_buf(a->cert_pem.data(), static_cast<int>(a->cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  ASSERT_NE(cert, nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  ASSERT_EQ(X509_digest(cert, EVP_sha256(), md, &n), 1);
  X509_free(cert);
  BIO_free(bio);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) absl::StrAppendFormat(&hex, "%02x", md[i]);
  EXPECT_EQ(a->fingerprint, "sha256:" + hex);
}

TEST(ControlTlsTest, TheTokenFileCarriesTheFingerprintAndTheCertificateMustMatchIt) {
  ScratchDir dir;
  auto id = MakeControlIdentity();
  ASSERT_TRUE(id.ok());
  const std::string token_file = dir.path() + "/token";
  WriteFile(token_file, FormatTokenFile("t0ken", id->fingerprint));
  // The token file names a certificate that is not there.
  auto missing = ReadJobCredentials(token_file);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir.path() + "/control.crt"), std::string::npos)
      << missing.status();
  WriteFile(dir.path() + "/control.crt", id->cert_pem);
  auto creds = ReadJobCredentials(token_file);
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_EQ(creds->token, "t0ken");
  EXPECT_EQ(creds->fingerprint, id->fingerprint);
  EXPECT_EQ(creds->cert_pem, id->cert_pem);
  // A line that is neither: named with its line.
  WriteFile(token_file, "t0ken\nsomething else\n");
  auto bad = ReadJobCredentials(token_file);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(token_file + ":2: expected 'tls sha256:<hex>'"),
            std::string::npos)
      << bad.status();
  WriteFile(token_file, "\n");
  EXPECT_FALSE(ReadJobCredentials(token_file).ok());
}

TEST(ControlTlsTest, OnlyAClientPinnedToTheJobsCertificateGetsThrough) {
  auto job = MakeControlIdentity();
  auto other = MakeControlIdentity();
  ASSERT_TRUE(job.ok() && other.ok());
  TlsServer server(&*job);
  JobCredentials pinned{"t", job->fingerprint, job->cert_pem};
  grpc::Status ok = CallPreflight(server.address(), pinned);
  EXPECT_TRUE(ok.ok()) << ok.error_code() << " " << ok.error_message();

  // Another job's certificate: the server cannot prove it holds that key.
  JobCredentials wrong{"t", other->fingerprint, other->cert_pem};
  grpc::Status refused = CallPreflight(server.address(), wrong);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  // Plain TCP against the TLS server: no call gets through.
  grpc::Status plain = CallPreflight(server.address(), JobCredentials{"t", "", ""});
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();
}

TEST(ControlTlsTest, APinnedClientRefusesAServerWithAnotherKey) {
  auto job = MakeControlIdentity();
  auto impostor = MakeControlIdentity();
  ASSERT_TRUE(job.ok() && impostor.ok());
  TlsServer server(&*impostor);  // listens where the launcher should be
  grpc::Status s = CallPreflight(server.address(), JobCredentials{"t", job->fingerprint, job->cert_pem});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  TlsServer plain(nullptr);
  grpc::Status p = CallPreflight(plain.address(), JobCredentials{"t", job->fingerprint, job->cert_pem});
  EXPECT_EQ(p.error_code(), grpc::StatusCode::UNAVAILABLE) << p.error_message();
}

// A relay's server identity: its certificate from `job` and the job's certificate after it.
ControlIdentity RelayIdentity(const ControlIdentity& job) {
  auto key = MakeRelayKey();
  EXPECT_TRUE(key.ok()) << key.status();
  auto cert = IssueRelayCertificate(job, key->public_key_pem);
  EXPECT_TRUE(cert.ok()) << cert.status();
  return ControlIdentity{*cert + job.cert_pem, key->private_key_pem, ""};
}

TEST(ControlTlsTest, ARelaysCertificateSignedWithTheJobsKeyIsTrustedByPinnedAgents) {
  auto job = MakeControlIdentity();
  auto other = MakeControlIdentity();
  ASSERT_TRUE(job.ok() && other.ok());
  const ControlIdentity relay = RelayIdentity(*job);
  TlsServer server(&relay);
  JobCredentials pinned{"t", job->fingerprint, job->cert_pem};
  grpc::Status ok = CallPreflight(server.address(), pinned);
  EXPECT_TRUE(ok.ok()) << ok.error_code() << " " << ok.error_message();
  // Pinned to another job: the relay's chain does not lead to that certificate.
  grpc::Status wrong = CallPreflight(server.address(), JobCredentials{"t", other->fingerprint, other->cert_pem});
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAVAILABLE) << wrong.error_message();
  // A relay certificate from another job's key, presented with this job's certificate beside
  // it, is refused: the signature does not verify.
  ControlIdentity forged = RelayIdentity(*other);
  forged.cert_pem = forged.cert_pem.substr(0, forged.cert_pem.find("-----END CERTIFICATE-----") + 26) +
                    job->cert_pem;
  TlsServer impostor(&forged);
  grpc::Status refused = CallPreflight(impostor.address(), pinned);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
}

TEST(ControlTlsTest, ARelaysCertificateSignsNothingAndOnlyAnEcKeyIsSigned) {
  auto job = MakeControlIdentity();
  ASSERT_TRUE(job.ok());
  const ControlIdentity relay = RelayIdentity(*job);
  BIO* bio = BIO_new_mem_buf(relay.cert_pem.data(), static_cast<int>(relay.cert_pem.size()));
  X509* leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(X509_check_ca(leaf), 0);  // not a CA: a relay cannot mint certificates
  X509_free(leaf);
  EXPECT_EQ(IssueRelayCertificate(*job, "not a key").status().code(),
            absl::StatusCode::kInvalidArgument);
  EVP_PKEY* rsa = EVP_RSA_gen(2048);
  ASSERT_NE(rsa, nullptr);
  BIO* out = BIO_new(BIO_s_mem());
  ASSERT_EQ(PEM_write_bio_PUBKEY(out, rsa), 1);
  char* data = nullptr;
  const long n = BIO_get_mem_data(out, &data);
  const std::string rsa_pem(data, static_cast<size_t>(n));
  BIO_free(out);
  EVP_PKEY_free(rsa);
  auto refused = IssueRelayCertificate(*job, rsa_pem);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
}

}  // namespace
}  // namespace dlaunch
