"""A CNN over a variable-size image: the text's T bytes become a T x T image (pixel (i, j) = byte i XOR byte j),
so a longer sentence is a bigger picture, and the convolutions' shapes follow the input.

Run it: `python -m explorer inspect --model examples/image_cnn.py --text "The cat sat." --set channels=16`."""

from typing import Annotated

import torch
from torch import nn

from explorer.sources.userfile import Range


class ImageCNN(nn.Module):
    def __init__(self, channels: int, blocks: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, channels)  # a pixel value -> a colour of `channels` components
        self.blocks = nn.Sequential(*[
            nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
                          nn.MaxPool2d(2, ceil_mode=True))
            for _ in range(blocks)])
        self.head = nn.Linear(channels, classes)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.embed(image).permute(0, 3, 1, 2)  # (1, H, W) pixel values -> (1, channels, H, W)
        x = self.blocks(x)
        return self.head(x.mean((2, 3)))  # global average pool: any image size -> (1, classes)


def build(channels: Annotated[int, Range(2, 64)] = 8, blocks: Annotated[int, Range(1, 6)] = 2,
          classes: Annotated[int, Range(2, 100)] = 10) -> nn.Module:
    """A CNN over a T x T image made from the text's bytes: the image grows with the input."""
    return ImageCNN(channels, blocks, classes)


def example_inputs(ids: torch.Tensor) -> tuple[torch.Tensor]:
    """The forward's input made from the byte ids (1, T): a (1, T, T) image of byte values."""
    return (ids[:, :, None] ^ ids[:, None, :],)
