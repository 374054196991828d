#include "worker/models.h"

#include "absl/strings/str_cat.h"

namespace dlaunch::worker {
namespace {

namespace nn = torch::nn;

nn::Conv2d Conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

// ResNet basic block (ResNet 18/34): two 3x3 convolutions and an identity or 1x1 shortcut.
struct BasicBlockImpl : nn::Module {
  static constexpr int64_t kExpansion = 1;
  BasicBlockImpl(int64_t in, int64_t planes, int64_t stride)
      : conv1(register_module("conv1", Conv(in, planes, 3, stride, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2(register_module("conv2", Conv(planes, planes, 3, 1, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(planes))) {
    if (stride != 1 || in != planes) {
      downsample = register_module(
          "downsample", nn::Sequential(Conv(in, planes, 1, stride, 0), nn::BatchNorm2d(planes)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    return torch::relu(out + (downsample ? downsample->forward(x) : x));
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

// ResNet bottleneck block (ResNet 50): 1x1 reduce, 3x3, 1x1 expand (x4).
struct BottleneckImpl : nn::Module {
  static constexpr int64_t kExpansion = 4;
  BottleneckImpl(int64_t in, int64_t planes, int64_t stride)
      : conv1(register_module("conv1", Conv(in, planes, 1, 1, 0))),
        bn1(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2(register_module("conv2", Conv(planes, planes, 3, stride, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(planes))),
        conv3(register_module("conv3", Conv(planes, planes * kExpansion, 1, 1, 0))),
        bn3(register_module("bn3", nn::BatchNorm2d(planes * kExpansion))) {
    if (stride != 1 || in != planes * kExpansion) {
      downsample = register_module(
          "downsample", nn::Sequential(Conv(in, planes * kExpansion, 1, stride, 0),
                                       nn::BatchNorm2d(planes * kExpansion)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1(conv1(x)));
    out = torch::relu(bn2(conv2(out)));
    out = bn3(conv3(out));
    return torch::relu(out + (downsample ? downsample->forward(x) : x));
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

// A Sequential with a concrete forward(), so that it can nest inside another Sequential.
struct StageImpl : nn::SequentialImpl {
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(torch::Tensor x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(Stage);

template <typename Block>
nn::Sequential ResNet(const std::vector<int64_t>& layers, int64_t channels, int64_t classes) {
  nn::Sequential net;
  net->push_back("conv1", Conv(channels, 64, 7, 2, 3));
  net->push_back("bn1", nn::BatchNorm2d(64));
  net->push_back("relu", nn::ReLU());
  net->push_back("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  int64_t in = 64;
  const int64_t planes[4] = {64, 128, 256, 512};
  for (int l = 0; l < 4; ++l) {
    Stage stage;
    for (int64_t b = 0; b < layers[l]; ++b) {
      const int64_t stride = (b == 0 && l > 0) ? 2 : 1;
      stage->push_back(Block(in, planes[l], stride));
      in = planes[l] * Block::Impl::kExpansion;
    }
    net->push_back(absl::StrCat("layer", l + 1), stage);
  }
  net->push_back("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  net->push_back("flatten", nn::Flatten());
  net->push_back("fc", nn::Linear(in, classes));
  net->push_back("log_softmax", nn::LogSoftmax(1));
  return net;
}

}  // namespace

absl::StatusOr<nn::Sequential> MakeModel(const std::string& name,
                                         const std::vector<int64_t>& image_shape,
                                         int64_t num_classes) {
  const int64_t c = image_shape.at(0), h = image_shape.at(1), w = image_shape.at(2);
  if (name == "cnn") {
    // The PyTorch examples/mnist network; 9216 = 64 x 12 x 12 for 28x28 inputs.
    const int64_t flat = 64 * ((h - 4) / 2) * ((w - 4) / 2);
    if (h < 6 || w < 6) return absl::InvalidArgumentError("cnn needs images of at least 6x6");
    return nn::Sequential(
        nn::Conv2d(nn::Conv2dOptions(c, 32, 3)), nn::ReLU(),
        nn::Conv2d(nn::Conv2dOptions(32, 64, 3)), nn::ReLU(),
        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Dropout(0.25), nn::Flatten(),
        nn::Linear(flat, 128), nn::ReLU(), nn::Dropout(0.5), nn::Linear(128, num_classes),
        nn::LogSoftmax(1));
  }
  if (name == "mlp") {
    return nn::Sequential(nn::Flatten(), nn::Linear(c * h * w, 512), nn::ReLU(),
                          nn::Linear(512, 256), nn::ReLU(), nn::Linear(256, num_classes),
                          nn::LogSoftmax(1));
  }
  if (name == "resnet18") return ResNet<BasicBlock>({2, 2, 2, 2}, c, num_classes);
  if (name == "resnet34") return ResNet<BasicBlock>({3, 4, 6, 3}, c, num_classes);
  if (name == "resnet50") return ResNet<Bottleneck>({3, 4, 6, 3}, c, num_classes);
  return absl::InvalidArgumentError(absl::StrCat("unknown model \"", name, "\""));
}

}  // namespace dlaunch::worker
