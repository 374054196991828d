#include "proto/control_tls.h"

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

constexpr long kValidBeforeNowS = 3600;        // nodes whose clocks lag still accept it
constexpr long kValidForS = 365L * 24 * 3600;  // longer than any walltime
constexpr char kTlsPrefix[] = "tls ";

struct BioFree { void operator()(BIO* b) const { BIO_free(b); } };
struct X509Free { void operator()(X509* x) const { X509_free(x); } };
struct PkeyFree { void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); } };
struct ExtFree { void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); } };
using Bio = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// A new P-256 key; null on failure. OpenSSL 1.1 (Debian 11, whose build reaches older glibc:
// scripts/release-tarball.sh) has no EVP_EC_gen.
EVP_PKEY* NewP256Key() {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  return EVP_EC_gen("P-256");
#else
  struct CtxFree { void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); } };
  std::unique_ptr<EVP_PKEY_CTX, CtxFree> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr));
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx.get(), NID_X9_62_prime256v1) != 1 ||
      EVP_PKEY_CTX_set_ec_param_enc(ctx.get(), OPENSSL_EC_NAMED_CURVE) != 1 ||
      EVP_PKEY_keygen(ctx.get(), &key) != 1) {
    return nullptr;
  }
  return key;
#endif
}

absl::Status OpensslError(absl::string_view what) {
  unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return absl::InternalError(absl::StrCat(what, ": ", buf));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, n > 0 ? static_cast<size_t>(n) : 0);
}

// "sha256:<hex>" of a certificate's DER bytes.
absl::StatusOr<std::string> DerFingerprint(absl::string_view der) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(der.data(), der.size(), md, &n, EVP_sha256(), nullptr) != 1) {
    return OpensslError("certificate digest");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

// The certificate's fields: a random serial, the fixed name as DNS name (what clients check),
// `issuer`'s subject as issuer (the certificate's own for the job's). A relay's subject differs
// from the job's: a certificate whose subject is its issuer's would be taken for self-signed. The job's certificate is the job's
// CA (path length 0: it signs relays' certificates, which sign nothing).
bool FillCertificate(X509* cert, EVP_PKEY* key, X509* issuer) {
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof(serial)) != 1) return false;
  serial[0] &= 0x7f;  // a positive serial
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  bool ok = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  X509_NAME* name = X509_get_subject_name(cert);
  const std::string dns = absl::StrCat("DNS:", kControlTlsName);
  const bool ca = issuer == nullptr;
  ok = ok && X509_set_version(cert, 2) == 1 &&
       X509_gmtime_adj(X509_getm_notBefore(cert), -kValidBeforeNowS) != nullptr &&
       X509_gmtime_adj(X509_getm_notAfter(cert), kValidForS) != nullptr &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>(ca ? kControlTlsName : "dlaunch-relay"),
                                  -1, -1, 0) == 1 &&
       X509_set_issuer_name(cert, ca ? name : X509_get_subject_name(issuer)) == 1 &&
       X509_set_pubkey(cert, key) == 1;
  if (!ok) return false;
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca ? cert : issuer, cert, nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    std::unique_ptr<X509_EXTENSION, ExtFree> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
    return ext && X509_add_ext(cert, ext.get(), -1) == 1;
  };
  return add(NID_basic_constraints, ca ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE") &&
         add(NID_key_usage, ca ? "critical,digitalSignature,keyCertSign" : "critical,digitalSignature") &&
         add(NID_ext_key_usage, "serverAuth") && add(NID_subject_alt_name, dns.c_str());
}

absl::StatusOr<std::string> PemOf(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return OpensslError("certificate encoding");
  return BioText(bio.get());
}

absl::StatusOr<std::string> Fingerprint(X509* cert) {
  unsigned char* der = nullptr;
  int n = i2d_X509(cert, &der);
  if (n <= 0) return OpensslError("certificate encoding");
  absl::StatusOr<std::string> out = DerFingerprint(
      absl::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  return out;
}

}  // namespace

absl::StatusOr<ControlIdentity> MakeControlIdentity() {
  Pkey key(NewP256Key());
  if (!key) return OpensslError("cannot make the control channel's key");
  X509Ptr cert(X509_new());
  if (!cert || !FillCertificate(cert.get(), key.get(), nullptr) ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return OpensslError("cannot make the control channel's certificate");
  }
  Bio cert_bio(BIO_new(BIO_s_mem())), key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return OpensslError("cannot encode the control channel's key");
  }
  absl::StatusOr<std::string> fingerprint = Fingerprint(cert.get());
  if (!fingerprint.ok()) return fingerprint.status();
  return ControlIdentity{BioText(cert_bio.get()), BioText(key_bio.get()), *fingerprint};
}

absl::StatusOr<RelayKey> MakeRelayKey() {
  Pkey key(NewP256Key());
  Bio pub(BIO_new(BIO_s_mem())), priv(BIO_new(BIO_s_mem()));
  if (!key || !pub || !priv || PEM_write_bio_PUBKEY(pub.get(), key.get()) != 1 ||
      PEM_write_bio_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpensslError("cannot make the relay's key");
  }
  return RelayKey{BioText(pub.get()), BioText(priv.get())};
}

absl::StatusOr<std::string> IssueRelayCertificate(const ControlIdentity& job,
                                                  const std::string& public_key_pem) {
  Bio job_cert_bio(BIO_new_mem_buf(job.cert_pem.data(), static_cast<int>(job.cert_pem.size())));
  Bio job_key_bio(BIO_new_mem_buf(job.key_pem.data(), static_cast<int>(job.key_pem.size())));
  Bio pub_bio(BIO_new_mem_buf(public_key_pem.data(), static_cast<int>(public_key_pem.size())));
  if (!job_cert_bio || !job_key_bio || !pub_bio) return OpensslError("out of memory");
  X509Ptr job_cert(PEM_read_bio_X509(job_cert_bio.get(), nullptr, nullptr, nullptr));
  Pkey job_key(PEM_read_bio_PrivateKey(job_key_bio.get(), nullptr, nullptr, nullptr));
  if (!job_cert || !job_key) return OpensslError("the job's certificate or key");
  Pkey relay_key(PEM_read_bio_PUBKEY(pub_bio.get(), nullptr, nullptr, nullptr));
  if (!relay_key) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the request's public_key_pem is not a PEM public key");
  }
  if (EVP_PKEY_base_id(relay_key.get()) != EVP_PKEY_EC || EVP_PKEY_bits(relay_key.get()) < 256) {
    return absl::InvalidArgumentError("the request's key is not an EC key of at least 256 bits");
  }
  X509Ptr cert(X509_new());
  if (!cert || !FillCertificate(cert.get(), relay_key.get(), job_cert.get()) ||
      X509_sign(cert.get(), job_key.get(), EVP_sha256()) == 0) {
    return OpensslError("cannot sign the relay's certificate");
  }
  return PemOf(cert.get());
}

// The DER bytes are the PEM block's base64 text: decoding it here rather than through
// OpenSSL's decoders keeps the agent's start-up cost to one SHA-256 (docs/BENCHMARKS.md).
absl::StatusOr<std::string> CertificateFingerprint(const std::string& cert_pem) {
  static const std::string kBegin = "-----BEGIN CERTIFICATE-----";
  static const std::string kEnd = "-----END CERTIFICATE-----";
  const size_t begin = cert_pem.find(kBegin);
  const size_t end = begin == std::string::npos ? begin : cert_pem.find(kEnd, begin);
  if (end == std::string::npos) return absl::InvalidArgumentError("not a PEM certificate");
  std::string base64 = cert_pem.substr(begin + kBegin.size(), end - begin - kBegin.size());
  base64.erase(std::remove_if(base64.begin(), base64.end(),
                              [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }),
               base64.end());
  std::string der;
  if (base64.empty() || !absl::Base64Unescape(base64, &der)) {
    return absl::InvalidArgumentError("not a PEM certificate");
  }
  return DerFingerprint(der);
}

std::string FormatTokenFile(const std::string& token, const std::string& fingerprint) {
  std::string text = absl::StrCat(token, "\n");
  if (!fingerprint.empty()) absl::StrAppend(&text, kTlsPrefix, fingerprint, "\n");
  return text;
}

absl::StatusOr<JobCredentials> ReadJobCredentials(const std::string& token_file) {
  absl::StatusOr<std::string> text = ReadFile(token_file);
  if (!text.ok()) return text.status();
  return ParseJobCredentials(*text, token_file);
}

absl::StatusOr<JobCredentials> ParseJobCredentials(const std::string& text,
                                                   const std::string& token_file) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  JobCredentials creds;
  if (!lines.empty()) creds.token = std::string(absl::StripAsciiWhitespace(lines[0]));
  if (creds.token.empty()) return absl::InvalidArgumentError(absl::StrCat(token_file, " holds no token"));
  for (size_t i = 1; i < lines.size(); ++i) {
    absl::string_view line = absl::StripAsciiWhitespace(lines[i]);
    if (!absl::StartsWith(line, kTlsPrefix) ||
        !absl::StartsWith(line.substr(sizeof(kTlsPrefix) - 1), "sha256:")) {
      return absl::InvalidArgumentError(absl::StrCat(token_file, ":", i + 1,
                                                     ": expected 'tls sha256:<hex>', got '",
                                                     line.substr(0, 80), "'"));
    }
    creds.fingerprint = std::string(line.substr(sizeof(kTlsPrefix) - 1));
  }
  if (creds.fingerprint.empty()) return creds;
  const std::string cert_path =
      (std::filesystem::path(token_file).parent_path() / kControlCertFile).string();
  absl::StatusOr<std::string> cert = ReadFile(cert_path);
  if (!cert.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the token file names the launcher's certificate but ", cert_path,
        " cannot be read: ", cert.status().message()));
  }
  absl::StatusOr<std::string> fingerprint = CertificateFingerprint(*cert);
  if (!fingerprint.ok() || *fingerprint != creds.fingerprint) {
    return absl::PermissionDeniedError(absl::StrCat(
        cert_path, " is not the certificate the token file pins (",
        fingerprint.ok() ? absl::StrCat("its fingerprint is ", *fingerprint)
                         : std::string(fingerprint.status().message()),
        ", the token file names ", creds.fingerprint, "); it was replaced"));
  }
  creds.cert_pem = *std::move(cert);
  return creds;
}

}  // namespace dlaunch
