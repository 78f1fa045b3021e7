#!/usr/bin/env python3
"""Embed a text file as a C string: embed.py INPUT OUTPUT SYMBOL."""
import sys

src, dst, sym = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
lines = ['/* Generated from %s by parity/judge/embed.py: edit that file, not this one. */' % src.split('/')[-1],
         'const char *%s(void) {' % sym, '  return']
for line in text.splitlines(True):
    esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
    lines.append('      "%s"' % esc)
lines.append('      ;')
lines.append('}')
with open(dst, 'w', encoding='utf-8') as f:
    f.write('\n'.join(lines) + '\n')
