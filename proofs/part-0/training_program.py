"""Figure 1: a complete PyTorch training program, a small network that learns a function of its inputs.

The data is synthetic (fixed seed), so every run prints the same story on the same machine.
"""
import torch
from torch import nn

# Pick the fastest device this machine has.
if torch.cuda.is_available():
    device = "cuda"
elif torch.backends.mps.is_available():
    device = "mps"
else:
    device = "cpu"

# proof: unfold
torch.manual_seed(0)
x = torch.randn(1024, 8)                             # 1024 samples, 8 features
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()           # a target the net must learn
x, y = x.to(device), y.to(device)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.layers(x)


model = Net().to(device)
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

losses = []
for step in range(200):
    pred = model(x)                # forward
    loss = loss_fn(pred, y)        # how wrong are we?
    loss.backward()                # gradients for every parameter
    optimizer.step()               # nudge the parameters
    optimizer.zero_grad()          # clear gradients for the next step
    losses.append(loss.item())
    if step % 40 == 0 or step == 199:
        print(f"step {step:3d}  loss {losses[-1]:.4f}")
# proof: fold

# Values the page cites.
first_loss = losses[0]
final_loss = losses[-1]
steps = len(losses)
n_params = sum(p.numel() for p in model.parameters())
print(f"device={device}  parameters={n_params}  steps={steps}  "
      f"loss {first_loss:.4f} -> {final_loss:.4f}")
if device == "cpu":
    print("No GPU here: on cuda or mps the same lines run unchanged, each op queued on the device.")
