"""A partial-FC face classifier (InsightFace's arcface_torch: iResNet
backbone, an embedding, and a classification layer over millions of
identities split over the ranks by class), written against PyTorch.
train_face.py and test/Python/test_workloads_more.py run it under PyTorch
as written and under of with only its three import lines changed.

- `IResNet`: InsightFace's iResNet (backbones/iresnet.py): a 3x3 stem, then
  stages of `IBasicBlock` (BN, 3x3, BN, ReLU, strided 3x3, BN, plus the
  shortcut), then BN, flatten, a linear layer to the embedding and a batch
  norm of the features. Beside InsightFace's definition: ReLU where it has
  PReLU (of has no PReLU yet), the features' BatchNorm1d written as a
  BatchNorm2d of [B, E, 1, 1] (the same normalisation; of has no
  BatchNorm1d yet), `width` scales the channel counts (64 in the real
  model) and `layers` the blocks per stage ((3, 13, 30, 3) for iResNet-100,
  (2, 2, 2, 2) for iResNet-18).
- `PartialFC`: the classification layer, a weight [classes, E] whose rows
  are the classes' centres. Its logits are cos(theta) between the
  normalised embedding and the normalised centres, the target's changed by
  the margin (ArcFace: cos(theta + m), CosFace: cos(theta) - m), all times
  the scale s, then softmax cross entropy. Under of the training script
  splits the weight over the ranks by class (S(0)), so the logits come out
  split by class (S(1)) and the cross entropy reduces its maximum, sum of
  exponentials and target logit across the ranks without gathering them.
- Class sampling (partial FC's sample rate): `sample_mask` marks the
  classes of a step (every class in the batch, and random others up to
  rate x classes); the other classes' logits are lowered by 1e4, which
  takes them out of the softmax exactly (exp(-1e4) is 0 in float32), so the
  loss is the softmax over the sampled classes and the rows of the others
  get no gradient. (InsightFace gathers the sampled rows instead, which
  also saves their matmul; see train_face.py.)
"""

import math

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1,
                     bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class IBasicBlock(nn.Module):
    """iResNet's block: BN, 3x3, BN, ReLU, 3x3 (strided), BN; the shortcut is
    the input or its strided 1x1 projection with batch norm."""

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(inplanes, eps=1e-05)
        self.conv1 = conv3x3(inplanes, planes)
        self.bn2 = nn.BatchNorm2d(planes, eps=1e-05)
        self.relu = nn.ReLU()
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn3 = nn.BatchNorm2d(planes, eps=1e-05)
        self.downsample = downsample

    def forward(self, x):
        out = self.conv1(self.bn1(x))
        out = self.conv2(self.relu(self.bn2(out)))
        out = self.bn3(out)
        identity = x if self.downsample is None else self.downsample(x)
        return out + identity


class IResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), embedding_size=512, width=64, image_size=112):
        super().__init__()
        self.inplanes = width
        self.conv1 = conv3x3(3, width)
        self.bn1 = nn.BatchNorm2d(width, eps=1e-05)
        self.relu = nn.ReLU()
        self.layer1 = self._make_layer(width, layers[0], stride=2)
        self.layer2 = self._make_layer(2 * width, layers[1], stride=2)
        self.layer3 = self._make_layer(4 * width, layers[2], stride=2)
        self.layer4 = self._make_layer(8 * width, layers[3], stride=2)
        self.bn2 = nn.BatchNorm2d(8 * width, eps=1e-05)
        side = image_size // 16
        self.fc = nn.Linear(8 * width * side * side, embedding_size)
        self.features = nn.BatchNorm2d(embedding_size, eps=1e-05)  # BatchNorm1d
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0, 0.1)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride),
                                       nn.BatchNorm2d(planes, eps=1e-05))
        layers = [IBasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(IBasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.bn2(x), 1)
        x = self.fc(x)
        return self.features(x.reshape(x.shape[0], x.shape[1], 1, 1)).reshape(x.shape)


def normalize(x):
    """F.normalize(x, dim=1): rows of unit length (norms below 1e-12
    taken as 1e-12)."""
    return x / x.square().sum(1, keepdim=True).sqrt().clamp_min(1e-12)


class PartialFC(nn.Module):
    """The margin-softmax classification layer (see the module docstring).
    margin "arcface" (m = 0.5 by default) or "cosface" (m = 0.4), scale s
    (64)."""

    def __init__(self, embedding_size, num_classes, margin="arcface", m=None, s=64.0):
        super().__init__()
        if margin not in ("arcface", "cosface"):
            raise ValueError(f"margin is 'arcface' or 'cosface', not {margin!r}")
        self.margin = margin
        self.m = (0.5 if margin == "arcface" else 0.4) if m is None else m
        self.s = s
        self.num_classes = num_classes
        self.weight = nn.Parameter(torch.randn(num_classes, embedding_size) * 0.01)

    def logits(self, embeddings, labels):
        """s x (cos(theta) with the target's margin) [B, classes]."""
        cosine = (normalize(embeddings) @ normalize(self.weight).t()).clamp(-1.0, 1.0)
        classes = torch.arange(self.num_classes)
        target = labels.unsqueeze(1) == classes.unsqueeze(0)
        if self.margin == "cosface":
            return torch.where(target, cosine - self.m, cosine) * self.s
        # cos(theta + m) = cos theta cos m - sin theta sin m, for theta + m
        # below pi; beyond, ArcFace's cos(theta) - m sin(m) keeps it
        # decreasing (InsightFace's th and mm).
        sine = (1.0 - cosine * cosine).clamp_min(1e-6).sqrt()
        phi = cosine * math.cos(self.m) - sine * math.sin(self.m)
        phi = torch.where(cosine > math.cos(math.pi - self.m), phi,
                          cosine - math.sin(math.pi - self.m) * self.m)
        return torch.where(target, phi, cosine) * self.s

    def forward(self, embeddings, labels, sampled=None):
        """The mean margin-softmax cross entropy; `sampled` [classes] (float,
        1 for the step's classes) leaves the others out."""
        logits = self.logits(embeddings, labels)
        if sampled is not None:
            logits = logits - (1.0 - sampled.unsqueeze(0)) * 1e4
        return F.cross_entropy(logits, labels)


class FaceModel(nn.Module):
    """Backbone and margin-softmax layer as one module: forward(images,
    labels[, sampled]) returns the loss, so the standard loop's step is one
    compiled step under of.compile(model)."""

    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, images, labels, sampled=None):
        return self.head(self.backbone(images), labels, sampled)


def sample_mask(labels, num_classes, sample_rate, rng):
    """Partial FC's class sampling, as a float mask [classes]: every class
    of the batch, and uniformly drawn others up to round(rate x classes)
    in all (InsightFace draws per rank; this draws over all the classes, so
    that any number of ranks samples the same classes)."""
    mask = np.zeros(num_classes, np.float32)
    positive = np.unique(labels)
    mask[positive] = 1.0
    wanted = max(int(round(sample_rate * num_classes)), len(positive))
    others = np.flatnonzero(mask == 0)
    mask[rng.choice(others, wanted - len(positive), replace=False)] = 1.0
    return mask
