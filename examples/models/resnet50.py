"""ResNet-50 v1.5 as torchvision defines it (models/resnet.py: Bottleneck
with the stride on its 3x3 convolution, a 1x1 projection with batch norm
where the shape changes, Kaiming-normal fan_out initialisation of the
convolutions, batch-norm gains 1 and shifts 0), written against PyTorch.
train_resnet50.py and test/Python/test_workloads.py run it under PyTorch
as written and under of with only its three import lines changed.

Beside torchvision's definition:
- `width` scales the channel counts (torchvision's is 64) and `layers` the
  blocks per stage (ResNet-50's (3, 4, 6, 3)), for models small enough for
  a CPU;
- `parameter_groups` splits the parameters into those with weight decay
  (convolution and classifier weights) and those without (batch-norm gains
  and shifts, biases), as NVIDIA's and DLPerf's ResNet-50 recipes do;
- `smoothed_cross_entropy` is F.cross_entropy(label_smoothing=eps) written
  out (of's F.cross_entropy does not take label_smoothing yet), so the
  training script computes the same loss under both frameworks;
- `TrainingModel` puts the loss (and autocast) inside the module, so the
  standard loop's step is one compiled step under of.compile(model).
"""

import torch
import torch.nn as nn
from torch.nn import functional as F


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1,
                     bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided: v1.5), 1x1 expand, each with batch norm;
    the shortcut is the input or its strided 1x1 projection."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers=(3, 4, 6, 3), num_classes=1000, width=64,
                 zero_init_residual=False):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(2 * width, layers[1], stride=2)
        self.layer3 = self._make_layer(4 * width, layers[2], stride=2)
        self.layer4 = self._make_layer(8 * width, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * Bottleneck.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.bn3.weight, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * Bottleneck.expansion, stride),
                nn.BatchNorm2d(planes * Bottleneck.expansion))
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        for _ in range(1, blocks):
            layers.append(Bottleneck(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


def resnet50(num_classes=1000, width=64, layers=(3, 4, 6, 3), **kwargs):
    """ResNet-50 v1.5 (torchvision.models.resnet50); `width` 64 and `layers`
    (3, 4, 6, 3) are the real model."""
    return ResNet(layers, num_classes=num_classes, width=width, **kwargs)


def parameter_groups(model, weight_decay):
    """Two optimizer groups: weight decay on the convolution and classifier
    weights, none on batch-norm gains and shifts and on biases (the
    one-dimensional parameters)."""
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def smoothed_cross_entropy(logits, target, label_smoothing=0.0):
    """F.cross_entropy(logits, target, label_smoothing=eps): the cross
    entropy against (1 - eps) * one_hot(target) + eps / C, that is
    (1 - eps) * cross_entropy + eps * mean over classes of -log p,
    averaged over the batch."""
    ce = F.cross_entropy(logits, target)
    if label_smoothing == 0.0:
        return ce
    return (1.0 - label_smoothing) * ce - label_smoothing * F.log_softmax(logits, -1).mean()


class TrainingModel(nn.Module):
    """The network and its loss as one module: forward(images, labels)
    returns (logits, loss), so that the training loop is the standard one
    (`loss = model(x, y)[1]; opt.zero_grad(); loss.backward(); opt.step()`),
    which of.compile(model) turns into one compiled step. With `amp` the
    network runs under autocast in bfloat16 on `device_type`, the loss in
    float32."""

    def __init__(self, net, label_smoothing=0.0, amp=False, device_type="cpu"):
        super().__init__()
        self.net = net
        self.label_smoothing = label_smoothing
        self.amp = amp
        self.device_type = device_type

    def forward(self, images, labels):
        with torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.amp):
            logits = self.net(images)
        return logits, smoothed_cross_entropy(logits.float(), labels, self.label_smoothing)
