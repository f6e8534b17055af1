#include "models/chat_template_syntax.h"

#include <gtest/gtest.h>

namespace llmd::models {
namespace {

TEST(ChatTemplateSyntax, JinjaTemplatesPass) {
  for (const char* jinja : {
           "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
           "{{- bos_token }}{%- for message in messages %}{{ message.content | trim }}{%- endfor %}",
           "{{ range(3) | list }}",  // Jinja's range is a call
           "{{'<s>'}}{{ ifx }}{{ end_token }}",
           "{{ block | upper }}{{ template ~ '\\n' }}{{ with[0] }}{{ end == 1 }}",  // variables with Go's names
           "plain text, no tags at all",
       }) {
    EXPECT_TRUE(CheckChatTemplate(jinja).ok()) << jinja << ": " << CheckChatTemplate(jinja).message();
  }
}

TEST(ChatTemplateSyntax, GoTemplatesAreRefusedNamingTheActionAndWhatToGive) {
  for (const char* go : {
           "{{ .Prompt }}",
           "{{- if .System }}<|im_start|>system\n{{ .System }}<|im_end|>{{ end }}",
           "{{ range .Messages }}{{ .Content }}{{ end }}",
           "{{ $last := 1 }}",
           "{{/* a comment */}}",
           "text {{else}} more",
           "{{ . }}",
       }) {
    const Status s = CheckChatTemplate(go);
    ASSERT_FALSE(s.ok()) << go;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("TEMPLATE is a Go template"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("give a Jinja template"), std::string::npos) << s.message();
  }
  const Status s = CheckChatTemplate("<s>{{ if .System }}{{ .System }}{{ end }}");
  EXPECT_NE(s.message().find("'{{ if .System }}' at byte 3"), std::string::npos) << s.message();
}

TEST(ChatTemplateSyntax, AnEmptyTemplateIsRefused) {
  const Status s = CheckChatTemplate("");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("TEMPLATE is empty"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace llmd::models
