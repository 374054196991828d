// QuickJson against protobuf's own printer (preserve_proto_field_names,
// always_print_primitive_fields): byte for byte wherever it takes the quick path, for every kind
// of journal event and metric line with random contents, and the quick path taken for the lines
// a job writes most.
#include "launcher/jobdir/json_print.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "dlaunch/journal.pb.h"

namespace dlaunch {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string ProtobufJson(const Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

// Fills a message with random values by reflection: every scalar kind, strings with the
// characters protobuf escapes, doubles of every size (NaN and infinities now and then), nested
// and repeated messages, one member of each oneof.
class Filler {
 public:
  explicit Filler(uint32_t seed) : rng_(seed) {}

  void Fill(Message* m, int depth) {
    const Descriptor* d = m->GetDescriptor();
    const Reflection* r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (Pick(3) == 0) continue;  // left unset (its default)
      if (f->containing_oneof() != nullptr && r->HasOneof(*m, f->containing_oneof())) continue;
      if (f->is_repeated()) {
        const int n = static_cast<int>(Pick(4));
        for (int k = 0; k < n; ++k) Add(m, f, depth);
      } else {
        Set(m, f, depth);
      }
    }
  }

 private:
  uint32_t Pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

  std::string String() {
    static const std::string kPlain = "abcXYZ019 _-.:/[](){}";
    static const std::string kOdd = "\"\\<>&='\n\t\x01\x7f\xc3\xa9";
    std::string s;
    const int n = static_cast<int>(Pick(12));
    for (int k = 0; k < n; ++k) {
      s.push_back(Pick(8) == 0 ? kOdd[Pick(kOdd.size())] : kPlain[Pick(kPlain.size())]);
    }
    return s;
  }

  double Double() {
    switch (Pick(10)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return static_cast<double>(static_cast<int>(Pick(100000)));
      case 3: return std::ldexp(1.0 + Pick(1000) / 7.0, static_cast<int>(Pick(200)) - 100);
      case 4: return Pick(4) == 0 ? std::nan("") : std::numeric_limits<double>::infinity();
      case 5: return 0.1 * Pick(1000) - 50;
      default: return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
    }
  }

  int64_t Int() {
    const int64_t big = static_cast<int64_t>(rng_()) << 31 | rng_();
    return Pick(3) == 0 ? -big : Pick(2) == 0 ? big : static_cast<int64_t>(Pick(1000));
  }

  void Set(Message* m, const FieldDescriptor* f, int depth) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: r->SetInt32(m, f, static_cast<int32_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(m, f, static_cast<uint32_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_INT64: r->SetInt64(m, f, Int()); break;
      case FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(m, f, static_cast<uint64_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_BOOL: r->SetBool(m, f, Pick(2) == 1); break;
      case FieldDescriptor::CPPTYPE_DOUBLE: r->SetDouble(m, f, Double()); break;
      case FieldDescriptor::CPPTYPE_FLOAT: r->SetFloat(m, f, static_cast<float>(Double())); break;
      case FieldDescriptor::CPPTYPE_ENUM:
        r->SetEnumValue(m, f, static_cast<int>(Pick(f->enum_type()->value_count() + 1)));
        break;
      case FieldDescriptor::CPPTYPE_STRING: r->SetString(m, f, String()); break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (depth < 4) Fill(r->MutableMessage(m, f), depth + 1);
        break;
    }
  }

  void Add(Message* m, const FieldDescriptor* f, int depth) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: r->AddInt32(m, f, static_cast<int32_t>(Int())); break;
      case FieldDescriptor::CPPTYPE_INT64: r->AddInt64(m, f, Int()); break;
      case FieldDescriptor::CPPTYPE_DOUBLE: r->AddDouble(m, f, Double()); break;
      case FieldDescriptor::CPPTYPE_STRING: r->AddString(m, f, String()); break;
      case FieldDescriptor::CPPTYPE_ENUM:
        r->AddEnumValue(m, f, static_cast<int>(Pick(f->enum_type()->value_count())));
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (depth < 4) Fill(r->AddMessage(m, f), depth + 1);
        break;
      default: break;  // the journal has no other repeated kinds
    }
  }

  std::mt19937 rng_;
};

// Every event kind (each member of JobEvent's oneof) and metric lines, many random fillings.
TEST(QuickJsonTest, WritesWhatProtobufWritesForRandomJournalLines) {
  const Descriptor* event = v1::JobEvent::descriptor();
  int quick = 0, total = 0;
  for (uint32_t seed = 0; seed < 3000; ++seed) {
    Filler filler(seed);
    std::unique_ptr<Message> m;
    if (seed % 3 == 0) {
      m = std::make_unique<v1::MetricLine>();
      filler.Fill(m.get(), 0);
    } else {
      auto e = std::make_unique<v1::JobEvent>();
      const FieldDescriptor* member =
          event->oneof_decl(0)->field(static_cast<int>(seed % event->oneof_decl(0)->field_count()));
      filler.Fill(e->GetReflection()->MutableMessage(e.get(), member), 1);
      e->set_time("2026-11-26T21:49:43.299Z");
      e->set_round(static_cast<int>(seed % 4));
      m = std::move(e);
    }
    std::string out;
    ++total;
    if (!QuickJson(*m, &out)) continue;
    ++quick;
    ASSERT_EQ(out, ProtobufJson(*m)) << "seed " << seed << ": " << m->ShortDebugString();
  }
  // The comparison means something only if the quick path is taken often.
  EXPECT_GT(quick, total / 4) << quick << " of " << total;
}

TEST(QuickJsonTest, TheLinesAJobWritesMostTakeTheQuickPath) {
  v1::MetricLine line;
  line.set_time("2026-11-26T21:49:43.299Z");
  line.set_node_id(9987);
  v1::WorkerReport* r = line.mutable_report();
  r->set_kind(v1::WorkerReport::STEP);
  r->set_rank(39951);
  r->set_step(1230);
  r->set_samples(640);
  r->set_interval_s(1.0);
  r->set_loss(1.0 / 13.3);
  r->set_samples_per_sec(640.0 / 0.997);
  r->set_phase(v1::WorkerReport::TRAINING);
  std::string out;
  ASSERT_TRUE(QuickJson(line, &out));
  EXPECT_EQ(out, ProtobufJson(line));
  EXPECT_NE(out.find("\"step\":\"1230\""), std::string::npos) << out;

  v1::JobEvent e;
  e.set_time("2026-11-26T21:49:43.299Z");
  e.set_round(1);
  v1::WorkerEnded* w = e.mutable_worker_ended();
  w->set_rank(39951);
  w->set_host("h9987");
  w->set_state("succeeded");
  out.clear();
  ASSERT_TRUE(QuickJson(e, &out));
  EXPECT_EQ(out, ProtobufJson(e));
}

TEST(QuickJsonTest, LeavesToProtobufWhatItEscapesItsOwnWay) {
  v1::MetricLine line;
  std::string out;
  for (const char* s : {"a<b", "tab\there", "caf\xc3\xa9", "x=1", "it's"}) {
    line.set_time(s);
    out.clear();
    EXPECT_FALSE(QuickJson(line, &out)) << s;
  }
  line.set_time("plain \"quoted\" back\\slash");
  out.clear();
  ASSERT_TRUE(QuickJson(line, &out));
  EXPECT_EQ(out, ProtobufJson(line));
  line.mutable_report()->set_loss(std::nan(""));
  out.clear();
  EXPECT_FALSE(QuickJson(line, &out));
}

}  // namespace
}  // namespace dlaunch
