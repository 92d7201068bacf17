"""An error in the program's own code that no check of its raised: no own-check failure."""
config = {"lr": 0.1}
print(config["momentum"])
