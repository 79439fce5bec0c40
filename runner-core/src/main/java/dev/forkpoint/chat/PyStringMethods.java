package dev.forkpoint.chat;

import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * Python's {@code str} methods on template strings ({@code content.strip()}, {@code .startswith(…)},
 * {@code .split(…)}, …), which Jinja templates call and Jinjava (whose strings are java.lang.String) does not know.
 * Resolves only method calls on strings with a Python name; everything else goes to the next resolver.
 */
final class PyStringMethods extends ELResolver {

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
        if (!(base instanceof String s) || method == null) return null;
        Object[] a = params == null ? new Object[0] : params;
        Object result;
        switch (method.toString()) {
            case "strip" -> result = strip(s, arg(a, 0), true, true);
            case "lstrip" -> result = strip(s, arg(a, 0), true, false);
            case "rstrip" -> result = strip(s, arg(a, 0), false, true);
            case "startswith" -> result = anyOf(a, p -> s.startsWith(p));
            case "endswith" -> result = anyOf(a, p -> s.endsWith(p));
            case "upper" -> result = s.toUpperCase(Locale.ROOT);
            case "lower" -> result = s.toLowerCase(Locale.ROOT);
            case "title" -> result = title(s);
            case "capitalize" -> result = s.isEmpty() ? s
                    : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
            case "swapcase" -> result = swapcase(s);
            case "split" -> result = split(s, arg(a, 0), a.length > 1 ? ((Number) a[1]).intValue() : -1);
            case "rsplit" -> result = rsplit(s, arg(a, 0), a.length > 1 ? ((Number) a[1]).intValue() : -1);
            case "splitlines" -> result = new ArrayList<>(s.lines().toList());
            case "replace" -> result = replace(s, str(a[0]), str(a[1]), a.length > 2 ? ((Number) a[2]).intValue() : -1);
            case "find" -> result = (long) s.indexOf(str(a[0]));
            case "rfind" -> result = (long) s.lastIndexOf(str(a[0]));
            case "index" -> {
                int i = s.indexOf(str(a[0]));
                if (i < 0) throw new IllegalArgumentException("substring not found");
                result = (long) i;
            }
            case "count" -> result = count(s, str(a[0]));
            case "join" -> result = join(s, a[0]);
            case "isdigit" -> result = !s.isEmpty() && s.chars().allMatch(Character::isDigit);
            case "isalpha" -> result = !s.isEmpty() && s.chars().allMatch(Character::isLetter);
            case "isalnum" -> result = !s.isEmpty() && s.chars().allMatch(Character::isLetterOrDigit);
            case "isspace" -> result = !s.isEmpty() && s.chars().allMatch(Character::isWhitespace);
            case "isupper" -> result = s.chars().anyMatch(Character::isLetter) && s.equals(s.toUpperCase(Locale.ROOT));
            case "islower" -> result = s.chars().anyMatch(Character::isLetter) && s.equals(s.toLowerCase(Locale.ROOT));
            default -> { return null; }
        }
        context.setPropertyResolved(true);
        return result;
    }

    private static String arg(Object[] a, int i) {
        return a.length > i && a[i] != null ? a[i].toString() : null;
    }

    private static String str(Object o) {
        return o == null ? "None" : o.toString();
    }

    private static boolean anyOf(Object[] a, java.util.function.Predicate<String> test) {
        if (a.length == 0) throw new IllegalArgumentException("startswith/endswith takes one argument");
        if (a[0] instanceof Collection<?> c) {
            for (Object o : c) if (test.test(str(o))) return true;
            return false;
        }
        return test.test(str(a[0]));
    }

    static String strip(String s, String chars, boolean left, boolean right) {
        int start = 0, end = s.length();
        if (left) while (start < end && stripped(s.charAt(start), chars)) start++;
        if (right) while (end > start && stripped(s.charAt(end - 1), chars)) end--;
        return s.substring(start, end);
    }

    private static boolean stripped(char c, String chars) {
        return chars == null ? Character.isWhitespace(c) || Character.isSpaceChar(c) : chars.indexOf(c) >= 0;
    }

    private static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            b.append(prevCased ? Character.toLowerCase(c) : Character.toUpperCase(c));
            prevCased = Character.isLetter(c);
        }
        return b.toString();
    }

    private static String swapcase(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            b.append(Character.isUpperCase(c) ? Character.toLowerCase(c) : Character.toUpperCase(c));
        }
        return b.toString();
    }

    static List<Object> split(String s, String sep, int maxsplit) {
        List<Object> parts = new ArrayList<>();
        if (sep == null) {
            int i = 0, n = s.length();
            while (true) {
                while (i < n && Character.isWhitespace(s.charAt(i))) i++;
                if (i >= n) break;
                if (maxsplit >= 0 && parts.size() == maxsplit) {
                    parts.add(strip(s.substring(i), null, false, true));
                    break;
                }
                int j = i;
                while (j < n && !Character.isWhitespace(s.charAt(j))) j++;
                parts.add(s.substring(i, j));
                i = j;
            }
            return parts;
        }
        if (sep.isEmpty()) throw new IllegalArgumentException("empty separator");
        int from = 0;
        while (maxsplit < 0 || parts.size() < maxsplit) {
            int at = s.indexOf(sep, from);
            if (at < 0) break;
            parts.add(s.substring(from, at));
            from = at + sep.length();
        }
        parts.add(s.substring(from));
        return parts;
    }

    private static List<Object> rsplit(String s, String sep, int maxsplit) {
        if (sep == null || maxsplit < 0) return split(s, sep, maxsplit);
        List<Object> parts = new ArrayList<>();
        int end = s.length();
        while (parts.size() < maxsplit) {
            int at = s.lastIndexOf(sep, end - sep.length());
            if (at < 0) break;
            parts.addFirst(s.substring(at + sep.length(), end));
            end = at;
        }
        parts.addFirst(s.substring(0, end));
        return parts;
    }

    private static String replace(String s, String old, String with, int count) {
        if (count < 0) return s.replace(old, with);
        StringBuilder b = new StringBuilder();
        int from = 0;
        for (int n = 0; n < count; n++) {
            int at = s.indexOf(old, from);
            if (at < 0) break;
            b.append(s, from, at).append(with);
            from = at + old.length();
        }
        return b.append(s.substring(from)).toString();
    }

    private static long count(String s, String sub) {
        if (sub.isEmpty()) return s.length() + 1;
        long n = 0;
        for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) n++;
        return n;
    }

    private static String join(String sep, Object items) {
        StringBuilder b = new StringBuilder();
        Iterator<?> it = items instanceof Iterable<?> i ? i.iterator() : List.of(items).iterator();
        while (it.hasNext()) {
            b.append(str(it.next()));
            if (it.hasNext()) b.append(sep);
        }
        return b.toString();
    }

    @Override public Object getValue(ELContext context, Object base, Object property) { return null; }
    @Override public Class<?> getType(ELContext context, Object base, Object property) { return null; }
    @Override public void setValue(ELContext context, Object base, Object property, Object value) {}
    @Override public boolean isReadOnly(ELContext context, Object base, Object property) { return true; }
    @Override public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) { return null; }
    @Override public Class<?> getCommonPropertyType(ELContext context, Object base) { return null; }
}
