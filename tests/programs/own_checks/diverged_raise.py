"""A training loop that raises its own exception when the loss goes up."""


class Diverged(RuntimeError):
    pass


def train(lr):
    w, previous = 1.0, float("inf")
    for step in range(5):
        loss = w * w
        if loss > previous:
            raise Diverged(f"loss went up at step {step}: {loss:.3f} > {previous:.3f}")
        previous, w = loss, w - lr * 2 * w


train(lr=1.5)
