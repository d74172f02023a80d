"""Small templates, one construct each, for tools/chat/make_goldens.py: whitespace control,
scoping, loops, filters, tests, methods, operators, macros, namespaces and values."""

M = [{"role": "system", "content": "Sys"}, {"role": "user", "content": " Hi there "},
     {"role": "assistant", "content": "Yo"}, {"role": "user", "content": "Bye"}]

CASES = [
    # whitespace: trim_blocks, lstrip_blocks, -/+ modifiers, comments, trailing newline
    ("{% if true %}\nA\n{% endif %}\nB\n", {}),
    ("  {% if true %}\n  x\n  {% endif %}\n", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("a  {{- 'b' -}}  c\n\n", {}),
    ("line\n    {%+ if true %}kept{% endif %}\n", {}),
    ("{% if true +%}\nkeep newline{% endif %}", {}),
    ("x {# comment #}\ny\n  {# indented comment #}\nz", {}),
    ("x {#- trimmed -#}   y", {}),
    ("{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("text\r\nwith crlf\r\n{% if true %}\r\nin\r\n{% endif %}", {}),
    ("\t{% for m in messages %}\t{{ m.role }}\n\t{% endfor %}", {"messages": M}),
    ("{%- for m in messages %}\n  {{- m.role }}: {{ m.content | trim }}\n{% endfor -%}\n", {"messages": M}),
    # loops
    ("{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }},{% endfor %}", {"messages": M}),
    ("{% for m in messages if m.role == 'user' %}{{ loop.index }}:{{ m.content }}|{{ loop.last }};{% endfor %}", {"messages": M}),
    ("{% for x in [] %}no{% else %}empty{% endfor %}", {}),
    ("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 1, "a": [1, 2], "c": None}}),
    ("{% for k in d %}{{ k }}{% endfor %}|{% for c in 'héllo' %}{{ c }}.{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("{% for x in [1,2] %}{% for y in 'ab' %}{{ loop.index }}{{ x }}{{ y }} {% endfor %}{{ loop.index }};{% endfor %}", {}),
    ("{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}", {}),
    # scoping
    ("{% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", {}),
    ("{% for i in [1,2,3] %}{% if i == 1 %}{% set y = 'set' %}{% endif %}{{ y }},{% endfor %}", {}),
    ("{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}", {}),
    ("{% if true %}{% set z = 5 %}{% endif %}{{ z }}", {}),
    ("{% set a, b = [1, 2] %}{{ b }}{{ a }}", {}),
    ("{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]", {}),
    # macros
    ("{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C', punct='.') }}", {}),
    ("{%- macro fact(n) -%}{%- if n <= 1 -%}1{%- else -%}{{ n * fact(n - 1) | int }}{%- endif -%}{%- endmacro -%}{{ fact(5) }}", {}),
    ("{% set g = 'global' %}{% macro show() %}{{ g }}{% endmacro %}{{ show() }}", {}),
    # operators and literals
    ("{{ 2 ** 62 }} {{ -2 ** 63 }} {{ (-2) ** 63 }} {{ 0 ** 0 }} {{ (-1) ** 7 }} {{ 9223372036854775807 - 1 }} {{ -9223372036854775807 - 1 }} {{ range(9223372036854775800, 9223372036854775807, 3) | list }}", {}),
    ("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2, 3] }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-5 }} {{ 3.0 }}", {}),
    ("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ true == 1 }} {{ none == none }}", {}),
    ("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ not 1 }} {{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' or none }}", {}),
    ("{{ 'yes' if x else 'no' }} {{ 'yes' if y else 'no' }} [{{ 'only' if false }}]", {"x": [0]}),
    ("{{ \"dq\" }} {{ 'it\\'s' }} {{ 'tab\\tnl\\nuni\\u00e9\\x41' }} {{ 'adj' 'acent' }} {{ 'back\\\\slash' }} {{ '\\d' }}", {}),
    ("{{ [1, 'a', none, true, 1.5, [2], {'k': 'v'}] }} {{ {'a': 1, 'b': 'x'} }} {{ ('t', 1) }} {{ \"it's\" ~ ['it\\'s', 'q\"'] }}", {}),
    ("{{ ['tab\t', 'nbsp\u00a0', 'shy\u00ad', 'zwsp\u200b', 'ls\u2028', 'bom\ufeff', 'pua\ue000', 'emoji😀', 'é', 'del\x7f', 'c1\x85', 'astral\U000e0001'] }}", {}),
    ("{{ none }} {{ true }} {{ False }} {{ undefined_var }}|{{ x.missing }}|{{ x['missing'] }}", {"x": {}}),
    ("{{ {'a': {'b': 1}} }} {% set d = {'k': {'n': [2]}} %}{{ d.k.n[0] }}{{ ({'x': 1}).x }}", {}),
    # subscripts and slices
    ("{{ messages[0].role }} {{ messages[-1]['content'] }} {{ messages[1:3] | length }} {{ (messages[::-1] | first).content }} {{ 'hello'[1:4] }} {{ 'hello'[::-1] }} {{ 'hello'[-2:] }} {{ [1,2,3,4,5][::2] }} {{ [1,2,3][5:] }} {{ [1,2,3][-5:2] }}", {"messages": M}),
    ("{{ messages[9] is defined }} {{ d.a.b }} {{ d['a']['b'] }}", {"messages": M, "d": {"a": {"b": "deep"}}}),
    # string methods
    ("[{{ '  x y  '.strip() }}][{{ '  x '.lstrip() }}][{{ ' x  '.rstrip() }}][{{ 'xxhixx'.strip('x') }}][{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}][{{ 'hello world-x'.title() }}][{{ 'hELLO'.capitalize() }}]", {}),
    ("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'a,b,,c'.split(',') }} {{ ' a  b \\n c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'aXbXc'.replace('X', '-') }} {{ 'aXbXc'.replace('X', '-', 1) }}", {}),
    ("{{ '-'.join(['a', 'b']) }} {{ 'abcabc'.find('c') }} {{ 'abcabc'.count('bc') }} {{ 'a\\nb'.splitlines() }} {{ '12'.isdigit() }}", {}),
    # dict methods
    ("{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}", {"d": {"a": 1, "b": 2}}),
    # filters
    ("[{{ ' x ' | trim }}][{{ 'xax' | trim('x') }}][{{ messages | length }}][{{ 'héllo' | length }}][{{ d | count }}][{{ 'Ab' | upper }}{{ 'Ab' | lower }}][{{ 'hello wORLD-foo(bar' | title }}][{{ 'hELLO' | capitalize }}]", {"messages": M, "d": {"a": 1}}),
    ("[{{ x | default('d') }}][{{ '' | default('d') }}][{{ '' | default('d', true) }}][{{ none | d('n') }}][{{ [1, 2] | join(', ') }}][{{ messages | map(attribute='role') | join('/') }}][{{ messages | join('|', attribute='content') }}]", {"messages": M}),
    ("[{{ [3, 1, 2] | first }}][{{ [3, 1, 2] | last }}][{{ 'abc' | first }}][{{ 42 | string }}][{{ '42' | int + 1 }}][{{ 'x' | int }}][{{ 3.9 | int }}][{{ '2.5' | float }}][{{ 'ab' | list }}][{{ 'a-b' | replace('-', '+') }}]", {}),
    ("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ messages | rejectattr('role', 'eq', 'user') | list | length }} {{ messages | selectattr('role') | list | length }} {{ [0, 1, 2] | select | list }} {{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3] | reject('even') | list }}", {"messages": M}),
    ("{{ ['a', 'b'] | map('upper') | list }} {{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [1, 2, 1] | unique | list }} {{ [1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ [1, 2, 3] | sum }} {{ [1, 5, 2] | max }} {{ [4, 2] | min }} {{ -3 | abs }}", {}),
    ("{{ {'b': 1, 'a': 2} | dictsort }} {{ {'b': 1, 'a': 2} | items | list }} {{ 'l1\\nl2\\n\\nl3' | indent(2) }}|{{ 'l1\\nl2' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(3, blank=true) }}", {}),
    ("{{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.1 | round(0, 'ceil') }} {{ '<a href=\"x\">&\\'' | e }}", {}),
    ("{{ ['b', 'A', 'a', 'C'] | sort }} {{ ['b', 'A', 'a'] | sort(case_sensitive=true) }} {{ [{'n': 'b', 'i': 1}, {'n': 'B', 'i': 2}, {'n': 'a', 'i': 3}] | sort(attribute='n', reverse=true) | map(attribute='i') | list }} {{ ['a', 'A', 'b'] | unique | list }} {{ ['a', 'B'] | max }} {{ ['a', 'B'] | min(case_sensitive=true) }}", {}),
    ("{{ {'b': 1, 'A': 2} | dictsort }} {{ {'b': 1, 'A': 2} | dictsort(true) }} {{ {'x': 2, 'y': 1} | dictsort(by='value') }} {{ {'x': 2, 'y': 1} | dictsort(reverse=true) }}", {}),
    ("[{{ 'a\n \nb' | indent(2) }}][{{ '3.7' | int }}][{{ '-2.9' | int }}][{{ ' 12 ' | int }}][{{ '1e3' | float }}][{{ ' a b  c  '.split(none, 1) }}][{{ 'a b'.split(' ', 0) }}]", {}),
    # tojson (transformers' version)
    ("{{ d | tojson }}", {"d": {"name": "f", "args": {"x": 1, "y": [1.5, True, None]}, "uni": "é😀\n\"q\"", "empty": {}, "el": []}}),
    ("{{ d | tojson(indent=4) }}", {"d": {"name": "f", "args": {"x": 1, "y": [1.5, True, None]}, "uni": "é😀\n", "empty": {}, "el": []}}),
    ("{{ d | tojson(indent=2, sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ 'x<y>&' | tojson }}|{{ 1e100 | tojson }}|{{ 0.5 | tojson }}", {"d": {"b": [1, 2], "a": {"z": None, "c": "s"}}}),
    # tests
    ("{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ n is none }} {{ x is string }} {{ 1 is number }} {{ 1.5 is float }} {{ 1 is integer }} {{ true is boolean }} {{ d is mapping }} {{ l is mapping }}", {"x": "s", "n": None, "d": {}, "l": []}),
    ("{{ l is iterable }} {{ 's' is iterable }} {{ 1 is iterable }} {{ l is sequence }} {{ d is sequence }} {{ 1 is sequence }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'a' is eq 'a' }} {{ 1 is ne 2 }} {{ 'ABC' is upper }} {{ 'abc' is lower }}", {"d": {}, "l": [1]}),
    ("{{ 2 is in [1, 2] }} {{ 'x' is in 'abc' }} {{ x is not none }} {{ false is sameas false }} {{ 1 is gt 0 }} {{ 1 is le 0 }} {{ range is callable }} {{ x is equalto 5 }} {{ x is true }} {{ true is true }}", {"x": 5}),
    # globals
    ("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {% set ns = namespace(a=1) %}{{ ns.a }} {{ dict(a=1, b='x') }}", {}),
    ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('custom failure: ' + messages[0].content) }}{% endif %}", {"messages": M}),
    # errors jinja2 raises inside templates (ordo must fail too)
    ("{{ 'a' + 1 }}", {}),
    ("{{ x.y.z }}", {}),
    ("{{ undefined_fn() }}", {}),
    ("{{ [1, 2].append(3) }}", {}),
    ("{% set l = [1] %}{% set l.x = 1 %}", {}),
    ("{{ 1 / 0 }}", {}),
    ("{{ undefined_var + 'x' }}", {}),
    ("{{ 1 < 'a' }}", {}),
    ("{% for x in 5 %}{% endfor %}", {}),
    ("{{ {'a': 1} + 1 }}", {}),
]
