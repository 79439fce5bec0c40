package dev.forkpoint.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.tree.Node;
import dev.forkpoint.InvalidInputException;
import jinjava.javax.el.CompositeELResolver;

import java.lang.reflect.Method;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Jinja2 template as Hugging Face transformers renders chat templates ({@code trim_blocks}, {@code lstrip_blocks},
 * loop controls, {@code raise_exception}, {@code strftime_now}, a {@code tojson} that writes like Python's
 * {@code json.dumps}, Python string methods), on Jinjava. Parsed once; {@link #render} is thread-safe.
 *
 * <p>Where Jinjava's language differs from Jinja2, the source is rewritten inside its tags before parsing
 * ({@code x[::-1]}, the {@code generation} tags of transformers' assistant-mask extension), and operator precedence is
 * Jinja's ({@code not x in y} is {@code not (x in y)}).
 */
final class JinjaTemplate {
    private static final JinjavaConfig CONFIG;
    private static final Jinjava JINJAVA;
    /** The message of the {@code raise_exception} call of the render running on this thread. */
    private static final ThreadLocal<String> RAISED = new ThreadLocal<>();
    /**
     * Bounds on one render, so that a model's template cannot hang or exhaust a server: template nodes visited (each
     * loop iteration visits its body's nodes), wall time, output and string sizes, list and map sizes and range().
     * Real chat templates stay far below them (a long chat visits thousands of nodes in milliseconds).
     */
    static final long MAX_NODES = 300_000, MAX_RENDER_MILLIS = 2_000, MAX_OUTPUT_CHARS = 4L << 20;
    static final int MAX_COLLECTION = 100_000, MAX_DEPTH = 50;
    /** The budget of the render running on this thread, or null between renders. */
    private static final ThreadLocal<Budget> BUDGET = new ThreadLocal<>();

    /** Nodes visited and the deadline of one render; {@link #exceeded} is the first limit hit, if any. */
    private static final class Budget {
        final long deadline = System.nanoTime() + MAX_RENDER_MILLIS * 1_000_000;
        long nodes;
        String exceeded;

        void visit() {
            if (exceeded == null && ++nodes > MAX_NODES) exceeded = "it visits more than " + MAX_NODES + " template nodes";
            if (exceeded == null && (nodes & 1023) == 0 && System.nanoTime() > deadline) exceeded = "it runs longer than " + MAX_RENDER_MILLIS + " ms";
            if (exceeded != null) throw new BudgetExceeded();
        }
    }

    /** Thrown into Jinjava to stop a render over budget; whatever Jinjava makes of it, the budget records why. */
    private static final class BudgetExceeded extends RuntimeException {
        BudgetExceeded() {
            super("chat template render budget exceeded", null, false, false);
        }
    }

    static {
        CompositeELResolver resolver = new CompositeELResolver();
        resolver.add(new PyStringMethods());
        resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY);
        CONFIG = JinjavaConfig.newBuilder()
                .withMaxOutputSize(MAX_OUTPUT_CHARS)
                .withMaxStringLength(MAX_OUTPUT_CHARS)
                .withMaxListSize(MAX_COLLECTION)
                .withMaxMapSize(MAX_COLLECTION)
                .withRangeLimit(MAX_COLLECTION)
                .withMaxRenderDepth(MAX_DEPTH)
                .withMaxMacroRecursionDepth(MAX_DEPTH)
                .withEnableRecursiveMacroCalls(true)
                .withNodePreProcessor((node, interpreter) -> {
                    Budget b = BUDGET.get();
                    if (b != null) b.visit();
                })
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                .withElResolver(resolver)
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withUseNaturalOperatorPrecedence(true)
                        .withIterateOverMapKeys(true)
                        .withParseWhitespaceControlStrictly(true)
                        .withKeepNullableLoopValues(true)
                        .withUseTrimmingForNotesAndExpressions(true)
                        .build())
                .build();
        JINJAVA = new Jinjava(CONFIG);
        Context global = JINJAVA.getGlobalContext();
        global.registerFunction(function("raise_exception", "raiseException"));
        global.registerFunction(function("strftime_now", "strftimeNow"));
        global.registerFilter(new ToJson());
        global.registerFilter(new Items());
        global.registerFilter(new Reversed());
        global.registerExpTest(new Iterable());
    }

    private final Node root;

    private JinjaTemplate(Node root) {
        this.root = root;
    }

    /** Parses {@code source}; a syntax error throws IllegalArgumentException with Jinjava's message and line. */
    static JinjaTemplate compile(String source) {
        JinjavaInterpreter interpreter = new JinjavaInterpreter(JINJAVA, new Context(JINJAVA.getGlobalContext()), CONFIG);
        JinjavaInterpreter.pushCurrent(interpreter);
        try {
            Node root = interpreter.parse(rewrite(source));
            List<String> errors = fatal(interpreter.getErrors());
            if (!errors.isEmpty()) throw new IllegalArgumentException(String.join("; ", errors));
            return new JinjaTemplate(root);
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (RuntimeException | StackOverflowError e) {   // Jinjava's own exceptions for sources it cannot parse
            throw new IllegalArgumentException(describe(e), e);
        } finally {
            JinjavaInterpreter.popCurrent();
        }
    }

    /**
     * Renders with {@code variables}. {@code raise_exception(msg)} throws InvalidInputException with msg; any other
     * template error throws InvalidInputException naming the chat template and Jinjava's message.
     */
    String render(Map<String, Object> variables) {
        JinjavaInterpreter interpreter = new JinjavaInterpreter(JINJAVA, new Context(JINJAVA.getGlobalContext(), variables), CONFIG);
        JinjavaInterpreter.pushCurrent(interpreter);
        RAISED.remove();
        Budget budget = new Budget();
        BUDGET.set(budget);
        try {
            String out;
            try {
                out = interpreter.render(root, false);
            } catch (InvalidInputException e) {
                throw e;
            } catch (RuntimeException | StackOverflowError e) {
                // Jinjava throws some template errors (syntax met while rendering, a collection too big, …) instead of
                // recording them; the budget's exception may surface here too
                if (budget.exceeded != null) throw overBudget(budget);
                throw new InvalidInputException("the model's chat template failed: " + describe(e), e);
            }
            if (budget.exceeded != null) throw overBudget(budget);
            String raised = RAISED.get();
            if (raised != null) throw new InvalidInputException(raised);
            List<String> errors = fatal(interpreter.getErrors());
            if (!errors.isEmpty()) {
                throw new InvalidInputException("the model's chat template failed: " + String.join("; ", errors));
            }
            return out;
        } finally {
            RAISED.remove();
            BUDGET.remove();
            JinjavaInterpreter.popCurrent();
        }
    }

    private static InvalidInputException overBudget(Budget b) {
        return new InvalidInputException("the model's chat template was stopped: " + b.exceeded
                + " (a chat template must render a prompt in bounded time and size)");
    }

    /** An exception from Jinjava as one line: its message, or its type when it has none. */
    private static String describe(Throwable e) {
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m.length() > 300 ? m.substring(0, 300) + "…" : m;
    }

    private static List<String> fatal(List<TemplateError> errors) {
        List<String> out = new ArrayList<>();
        for (TemplateError e : errors) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) {
                out.add(e.getMessage() + (e.getLineno() > 0 ? " (line " + e.getLineno() + ")" : ""));
            }
        }
        return out;
    }

    private static final Pattern TAG = Pattern.compile("\\{\\{.*?}}|\\{%.*?%}", Pattern.DOTALL);
    private static final Pattern GENERATION_TAG = Pattern.compile("\\{%[-+]?\\s*(end)?generation\\s*[-+]?%}");
    private static final Pattern STRING_LITERAL = Pattern.compile("'(?:[^'\\\\]|\\\\.)*'|\"(?:[^\"\\\\]|\\\\.)*\"");
    /** A string literal (as a placeholder), or a name with attribute and subscript accesses. */
    private static final String OPERAND = "(\u0001\\d+\u0002|[A-Za-z_]\\w*(?:\\.\\w+|\\[[^\\[\\]]*])*)";
    private static final Pattern REVERSED_SLICE =
            Pattern.compile("(\u0001\\d+\u0002|[A-Za-z_]\\w*(?:\\.\\w+|\\[[^\\[\\]]*])*|\\([^()]*\\))"
                    + "\\[\\s*:\\s*:\\s*-1\\s*]");
    private static final Pattern NOT_IS_NOT = Pattern.compile("(?<![\\w.])not\\s+" + OPERAND + "\\s+is\\s+not\\s+");
    private static final Pattern NOT_IS = Pattern.compile("(?<![\\w.])not\\s+" + OPERAND + "\\s+is\\s+");
    private static final Pattern NOT_IN = Pattern.compile("(?<![\\w.])not\\s+" + OPERAND + "\\s+in\\s+");

    /**
     * The source with the Jinja2 constructs Jinjava reads differently rewritten inside tags (text outside tags and
     * string literals are unchanged): {@code x[::-1]}; {@code not x in y} and {@code not x is test}, which Jinjava
     * would read as {@code (not x) in y}; transformers' {@code generation} tags; keyword arguments whose value has
     * operators ({@code namespace(i=messages|length - 1)}, Qwen3's template), which Jinjava would read as
     * {@code (i=messages|length) - 1}: their values are put in parentheses.
     */
    static String rewrite(String source) {
        Matcher m = TAG.matcher(source);
        StringBuilder out = new StringBuilder(source.length());
        while (m.find()) {
            String tag = m.group();
            tag = GENERATION_TAG.matcher(tag).matches() ? "" : rewriteTag(tag);
            m.appendReplacement(out, Matcher.quoteReplacement(tag));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static String rewriteTag(String tag) {
        List<String> literals = new ArrayList<>();
        Matcher lit = STRING_LITERAL.matcher(tag);
        StringBuilder masked = new StringBuilder();
        while (lit.find()) {
            literals.add(lit.group());
            lit.appendReplacement(masked, Matcher.quoteReplacement("\u0001" + (literals.size() - 1) + "\u0002"));
        }
        lit.appendTail(masked);
        String t = masked.toString();
        t = REVERSED_SLICE.matcher(t).replaceAll("($1|py_reversed)");
        t = NOT_IS_NOT.matcher(t).replaceAll("$1 is ");
        t = NOT_IS.matcher(t).replaceAll("$1 is not ");
        t = NOT_IN.matcher(t).replaceAll("$1 not in ");
        t = parenthesizeKeywordValues(t);
        Matcher ph = Pattern.compile("\u0001(\\d+)\u0002").matcher(t);
        StringBuilder restored = new StringBuilder();
        while (ph.find()) ph.appendReplacement(restored, Matcher.quoteReplacement(literals.get(Integer.parseInt(ph.group(1)))));
        ph.appendTail(restored);
        return restored.toString();
    }

    /** {@code f(name=value, …)} → {@code f(name=(value), …)} in a tag whose string literals are masked. */
    static String parenthesizeKeywordValues(String t) {
        StringBuilder out = new StringBuilder(t.length() + 8);
        java.util.ArrayDeque<Character> brackets = new java.util.ArrayDeque<>();
        java.util.ArrayDeque<Integer> open = new java.util.ArrayDeque<>();   // bracket depths with a value in parentheses
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            switch (c) {
                case '(', '[', '{' -> brackets.push(c);
                case ')', ']', '}' -> {
                    if (!open.isEmpty() && open.peek() == brackets.size()) {
                        out.append(')');
                        open.pop();
                    }
                    if (!brackets.isEmpty()) brackets.pop();
                }
                case ',' -> {
                    if (!open.isEmpty() && open.peek() == brackets.size()) {
                        out.append(')');
                        open.pop();
                    }
                }
                case '=' -> {
                    char next = i + 1 < t.length() ? t.charAt(i + 1) : ' ';
                    char prev = i > 0 ? t.charAt(i - 1) : ' ';
                    if (!brackets.isEmpty() && brackets.peek() == '(' && next != '=' && "=!<>".indexOf(prev) < 0 && keywordBefore(out)) {
                        out.append("=(");
                        open.push(brackets.size());
                        continue;
                    }
                }
                default -> { }
            }
            out.append(c);
        }
        while (!open.isEmpty()) {
            out.append(')');
            open.pop();
        }
        return out.toString();
    }

    /** Whether {@code s} ends with "( name" or ", name" (whitespace allowed): a keyword argument's name. */
    private static boolean keywordBefore(CharSequence s) {
        int i = s.length();
        while (i > 0 && Character.isWhitespace(s.charAt(i - 1))) i--;
        int end = i;
        while (i > 0 && (Character.isLetterOrDigit(s.charAt(i - 1)) || s.charAt(i - 1) == '_')) i--;
        if (i == end || Character.isDigit(s.charAt(i))) return false;
        while (i > 0 && Character.isWhitespace(s.charAt(i - 1))) i--;
        return i > 0 && (s.charAt(i - 1) == '(' || s.charAt(i - 1) == ',');
    }

    private static ELFunctionDefinition function(String name, String method) {
        try {
            Method m = JinjaTemplate.class.getDeclaredMethod(method, String.class);
            m.setAccessible(true);
            return new ELFunctionDefinition("", name, m);
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException(e);
        }
    }

    static String raiseException(String message) {
        String text = message == null ? "the chat template raised an error" : message;
        RAISED.set(text);
        throw new InvalidInputException(text);
    }

    static String strftimeNow(String format) {
        return Strftime.format(format, ZonedDateTime.now());
    }

    /** {@code tojson}, {@code tojson(indent=N)}: Python's json.dumps as transformers' template environment calls it. */
    private static final class ToJson implements Filter {
        @Override public String getName() { return "tojson"; }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return PyJson.dumps(var, args.length > 0 && args[0] != null ? Integer.parseInt(args[0]) : 0);
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
            return PyJson.dumps(var, indent instanceof Number n ? n.intValue() : indent == null ? 0 : Integer.parseInt(indent.toString()));
        }
    }

    /** {@code items}: a mapping's (key, value) pairs, as Jinja 3.1's filter of that name. */
    private static final class Items implements Filter {
        @Override public String getName() { return "items"; }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            if (var == null) return List.of();
            if (!(var instanceof Map<?, ?> map)) throw new IllegalArgumentException("items expects a mapping");
            return new ArrayList<>(map.entrySet());
        }
    }

    /** {@code x[::-1]} (rewritten to this filter): a reversed list, or a reversed string. */
    private static final class Reversed implements Filter {
        @Override public String getName() { return "py_reversed"; }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            if (var == null) return null;
            if (var instanceof CharSequence s) return new StringBuilder(s).reverse().toString();
            List<Object> list = new ArrayList<>();
            if (var instanceof java.lang.Iterable<?> it) it.forEach(list::add);
            else if (var instanceof Object[] a) Collections.addAll(list, a);
            else throw new IllegalArgumentException("cannot reverse " + var.getClass().getSimpleName());
            Collections.reverse(list);
            return list;
        }
    }

    /** {@code is iterable}: as in Python, strings and mappings are iterable too. */
    private static final class Iterable implements ExpTest {
        @Override public String getName() { return "iterable"; }

        @Override
        public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
            return var instanceof CharSequence || var instanceof java.lang.Iterable<?> || var instanceof Map<?, ?>
                    || var instanceof Object[];
        }
    }
}
