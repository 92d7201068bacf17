import argparse

parser = argparse.ArgumentParser()
parser.add_argument("data")
args = parser.parse_args()
print(args.data)
