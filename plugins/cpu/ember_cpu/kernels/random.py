"""(filled in below)"""


def register(lib):
    pass
