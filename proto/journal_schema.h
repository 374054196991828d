// The journal's schema version, in a header of its own so that the pure job decisions
// (launcher/job) can stamp it without linking the job directory's code.
#pragma once

namespace dlaunch {

// The schema this dlaunch writes (JournalOpened.schema_version). 1: the untyped journal.
constexpr int kJournalSchemaVersion = 2;

}  // namespace dlaunch
