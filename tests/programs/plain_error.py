x = 1
raise KeyError("no such thing")
