// The launcher's end of a relay's stream (docs/relays.md). A relay carries the Session streams
// of the agents connected to it over one stream, batched both ways; this end unpacks each
// RelayUp into the same ControlHandler calls a Session stream makes (opened, each message,
// ended), in one task on the loop per RelayUp, and packs the commands for the relay's agents
// into RelayDown writes with one write in flight. A queued ping for an agent is replaced by a
// newer command for it, as on a Session stream.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "dlaunch/control.pb.h"

namespace dlaunch {

class ControlService;

// The most commands in one RelayDown write; more wait for the next write.
inline constexpr int kRelayDownMaxCommands = 1024;

// `peer`: the relay's address, to name it when its stream ends while it still carries sessions
// (they are then moving: ControlHandler::HandleSessionsMoving).
grpc::ServerBidiReactor<v1::RelayUp, v1::RelayDown>* NewRelayReactor(ControlService* service,
                                                                    std::string peer);
// A Relay call answered with `status` at once.
grpc::ServerBidiReactor<v1::RelayUp, v1::RelayDown>* RefusedRelay(grpc::Status status);

}  // namespace dlaunch
