import os


def fine(a, b):
    """This function parses."""
    return a + b


def broken(x:
    if x > 1
        return [1, 2, 3
    while True: print("never closed"
    return x


class AlsoFine:
    def method(self):
        value = {"a": 1, "b": 2}
        return value["a"]


def 壊れた関数(値):
    結果 = 値 +* 2  # 構文エラー
    return 結果 )


def tail():
    return os.getcwd()
