#include "worker/worker_options.h"

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

absl::StatusOr<WorkerOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "dlaunch-worker");
  return ParseWorkerOptions(args);
}

TEST(WorkerOptionsTest, Defaults) {
  absl::StatusOr<WorkerOptions> o = Parse({});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->model, "cnn");
  EXPECT_EQ(o->dataset, "fashion-mnist");
  EXPECT_EQ(o->epochs, 1);
  EXPECT_EQ(o->batch_size, 64);
  EXPECT_EQ(o->backend, "auto");
  EXPECT_EQ(o->device, "auto");
  EXPECT_EQ(o->lr_schedule, "constant");
  EXPECT_FALSE(o->channels_last);
}

TEST(WorkerOptionsTest, ParsesTheDocumentedFlags) {
  absl::StatusOr<WorkerOptions> o = Parse(
      {"--model", "resnet50", "--dataset=synthetic", "--image-shape", "3,224,224", "--steps", "7",
       "--batch-size", "32", "--lr", "0.1", "--warmup-epochs", "2", "--lr-schedule", "cosine", "--backend", "gloo", "--device", "cuda", "--amp",
       "bf16", "--checkpoint-dir", "/tmp/c", "--checkpoint-every", "5", "--resume",
       "--report-every", "3", "--seed", "9", "--summary-json", "/tmp/s.json", "--threads", "2",
       "--store-timeout", "1.5", "--save-params", "/tmp/p", "--no-eval", "--channels-last"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->model, "resnet50");
  EXPECT_EQ(o->image_shape, (std::vector<int64_t>{3, 224, 224}));
  EXPECT_EQ(o->steps, 7);
  EXPECT_EQ(o->batch_size, 32);
  EXPECT_DOUBLE_EQ(o->lr, 0.1);
  EXPECT_DOUBLE_EQ(o->warmup_epochs, 2);
  EXPECT_EQ(o->lr_schedule, "cosine");
  EXPECT_EQ(o->amp, "bf16");
  EXPECT_EQ(o->device, "cuda");
  EXPECT_TRUE(o->resume);
  EXPECT_EQ(o->checkpoint_every, 5);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_EQ(o->threads, 2);
  EXPECT_DOUBLE_EQ(o->store_timeout_s, 1.5);
  EXPECT_FALSE(o->evaluate);
  EXPECT_TRUE(o->channels_last);
}

TEST(WorkerOptionsTest, FashionMnistFixesTheShape) {
  absl::StatusOr<WorkerOptions> o = Parse({"--image-shape", "3,32,32"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->image_shape, (std::vector<int64_t>{1, 28, 28}));
}

TEST(WorkerOptionsTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  for (const Case& c : std::vector<Case>{
           {{"--model", "vgg"}, "--model"},
           {{"--device", "tpu"}, "--device"},
           {{"--batch-size", "0"}, "--batch-size"},
           {{"--image-shape", "3,32"}, "--image-shape"},
           {{"--lr", "fast"}, "--lr"},
           {{"--lr-schedule", "step"}, "--lr-schedule"},
           {{"--bogus"}, "--bogus"},
           {{"--steps"}, "--steps"},
           {{"--resume"}, "--checkpoint-dir"},
           {{"--epochs", "2", "--steps", "3"}, "--steps"},
           {{"--resume=yes", "--checkpoint-dir", "x"}, "--resume"},
           {{"stray"}, "stray"},
       }) {
    absl::StatusOr<WorkerOptions> o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.args[0];
    EXPECT_TRUE(absl::IsInvalidArgument(o.status()));
    EXPECT_NE(o.status().message().find(c.mentions), absl::string_view::npos) << o.status();
  }
}

TEST(WorkerOptionsTest, Help) {
  EXPECT_TRUE(WantsHelp({"w", "--model", "mlp", "--help"}));
  EXPECT_FALSE(WantsHelp({"w"}));
  EXPECT_NE(WorkerUsage().find("--summary-json"), std::string::npos);
}

}  // namespace
}  // namespace dlaunch::worker
