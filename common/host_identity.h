// Who this host is and how others reach it: its name, the one rule for comparing host names,
// addresses, free ports, random tokens.
#pragma once

#include <string>

namespace dlaunch {

// This machine's host name as gethostname() reports it.
std::string LocalHostName();

// The one rule for comparing host names: nodefiles often hold fully qualified names
// (x3005c0s13b0n0.hsn.cm.polaris...) while gethostname() gives the short one, and host names are
// case-insensitive. Lower-cased and cut at the first dot; an address ("10.0.0.2", "::1") is
// returned lower-cased but whole.
std::string ShortHostName(const std::string& host);

// The address other nodes reach `host` at: the name's IPv4 address if it is not loopback, else
// the first non-loopback interface address, else 127.0.0.1.
std::string AdvertisedAddress(const std::string& host);

// The local address the kernel would use to reach `target` ("host:port" or "host").
std::string RouteAddressTo(const std::string& target);

// A TCP port that is free now on `addr` (0 when none could be bound). There is a window between
// this call and the caller binding it, as with torchrun's MASTER_PORT.
int FreePort(const std::string& addr);

// `n` random hex digits from std::random_device (job tokens, unique names).
std::string RandomHex(int n);

}  // namespace dlaunch
