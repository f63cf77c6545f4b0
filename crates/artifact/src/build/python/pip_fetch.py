# Saves NAME==VERSION's sdist (KIND "sdist") or pure-Python wheel (KIND
# "pure-wheel") into DEST, found and downloaded through the host pip's own
# finder and session: its index, proxy, certificates and credentials are the
# host's configuration. Unlike `pip download`, nothing of the package runs
# on the host (pip download prepares an sdist's metadata by running its
# build backend, which for borgbackup needs its C libraries on the host).
# Prints the saved file's path; exit status 3 when no such file is served.
import os
import sys

from pip._internal.commands import create_command

name, version, kind, dest = sys.argv[1:5]
cmd = create_command("download")
options, _ = cmd.parse_args(["--no-deps", "x"])
with cmd.main_context():
    session = cmd.get_default_session(options)
    finder = cmd._build_package_finder(options=options, session=session)
    candidates = finder.find_all_candidates(name)
    served = sorted({str(c.version) for c in candidates})
    def wanted(link):
        if kind == "pure-wheel":
            return link.is_wheel and link.filename.endswith("-none-any.whl")
        return not link.is_wheel and link.filename.endswith((".tar.gz", ".tar.bz2"))
    links = [c.link for c in candidates if str(c.version) == version and wanted(c.link)]
    if not links:
        print(
            "no %s of %s==%s on the index (versions it serves: %s)"
            % (kind, name, version, ", ".join(served[-12:]) or "none"),
            file=sys.stderr,
        )
        sys.exit(3)
    link = links[0]
    response = session.get(link.url_without_fragment, stream=True)
    response.raise_for_status()
    path = os.path.join(dest, link.filename)
    with open(path, "wb") as out:
        for chunk in response.iter_content(1 << 16):
            out.write(chunk)
    print(path)
