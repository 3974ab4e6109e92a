"""Two small models written against PyTorch for the gradient checks (the
tests load them under torch and, with the import lines changed, under of):
an MLP with ReLUs, and a convnet whose poolings take both ways the CPU
pipeline lowers a pooling gradient (tiling 2x2 max windows: a generated
kernel; overlapping 3x3 average windows: oneDNN's step)."""

import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, sizes=(32, 64, 64, 10)):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class PoolNet(nn.Module):
    def __init__(self, channels=16, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.BatchNorm2d(2 * channels),
            nn.ReLU(),
            nn.AvgPool2d(3, stride=2, padding=1))
        self.fc = nn.Linear(2 * channels, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))
